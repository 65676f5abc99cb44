// Whether the native runtime survives what a receiving proxy does when its sender dies: a user
// event that a marker waits for set to an error. PoCL 3.1 aborts there ("PTHREAD ERROR in
// pocl_update_event_failed", docs/FINDINGS.md); exits 0 if the runtime came through.
//   failed-event-probe   (the first device of the first platform)
#include <CL/cl.h>

#include <cstdio>

int main() {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_int status = clGetPlatformIDs(1, &platform, nullptr);
  if (status == CL_SUCCESS) status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  cl_context context = status == CL_SUCCESS ? clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status) : nullptr;
  if (status != CL_SUCCESS) {
    std::fprintf(stderr, "failed-event-probe: no native device (%d)\n", status);
    return 2;
  }
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  cl_event data = clCreateUserEvent(context, &status);
  clEnqueueMarkerWithWaitList(queue, 1, &data, nullptr);
  clFlush(queue);
  clSetUserEventStatus(data, CL_OUT_OF_RESOURCES);
  clFinish(queue);
  std::printf("failed-event-probe: the runtime fails a user event's waiters and goes on\n");
  clReleaseEvent(data);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
