/* HiveCL's additions to the OpenCL API. */
#ifndef CL_HIVECL_H
#define CL_HIVECL_H

/* clGetDeviceInfo: the node (host name) a HiveCL device is on, as a NUL-terminated
 * string. Other platforms answer CL_INVALID_VALUE. The value is not registered
 * with Khronos; it sits at the top of the vendor-extension range. */
#define CL_DEVICE_NODE_NAME_HIVECL 0x4FF0

/* clGetDeviceInfo: how bulk data moves between this process and the device's proxy, as a
 * NUL-terminated string: "memory" (same node: the proxy copies the application's memory
 * directly), "mpi", or "" while no context has connected to the proxy yet. */
#define CL_DEVICE_DATA_PATH_HIVECL 0x4FF1

/* clGetPlatformInfo: how many messages (control frames: requests to a proxy) this process
 * has sent so far, to all proxies together, as a cl_ulong. Bulk data (buffer contents)
 * is not counted. It shows what a sequence of calls costs in messages (tests/bench). */
#define CL_PLATFORM_MESSAGES_SENT_HIVECL 0x4FF2

#endif
