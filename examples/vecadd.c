/* Vector addition with plain OpenCL: runs on whatever platform and device the command
 * line picks, natively or through HiveCL.
 *
 *   vecadd [--platform NAME] [--device INDEX] [--size N]
 *
 * NAME is matched against the start of CL_PLATFORM_NAME ("HiveCL", "Portable", "NVIDIA");
 * without it the first platform is used. On a HiveCL device the node it runs on is shown.
 */
#include <CL/cl.h>
#include <CL/cl_hivecl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* kernel_source =
    "__kernel void vecadd(__global const float* a, __global const float* b, __global float* c, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

static int fail(const char* what, cl_int status) {
  fprintf(stderr, "vecadd: %s failed (%d)\n", what, status);
  return 1;
}

static cl_platform_id pick_platform(const char* name) {
  cl_uint count = 0;
  if (clGetPlatformIDs(0, NULL, &count) != CL_SUCCESS || count == 0) return NULL;
  cl_platform_id* platforms = malloc(count * sizeof *platforms);
  clGetPlatformIDs(count, platforms, NULL);
  cl_platform_id chosen = name ? NULL : platforms[0];
  for (cl_uint i = 0; name && i < count && !chosen; ++i) {
    char platform_name[256] = "";
    clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    if (strncmp(platform_name, name, strlen(name)) == 0) chosen = platforms[i];
  }
  free(platforms);
  return chosen;
}

int main(int argc, char** argv) {
  const char* platform_name = NULL;
  cl_uint device_index = 0;
  cl_uint n = 1u << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--platform") == 0) platform_name = argv[i + 1];
    else if (strcmp(argv[i], "--device") == 0) device_index = (cl_uint)atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0) n = (cl_uint)strtoul(argv[i + 1], NULL, 0);
  }
  cl_platform_id platform = pick_platform(platform_name);
  if (!platform) {
    fprintf(stderr, "vecadd: no platform%s%s\n", platform_name ? " named " : "", platform_name ? platform_name : "");
    return 1;
  }
  cl_uint device_count = 0;
  cl_int status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &device_count);
  if (status != CL_SUCCESS || device_index >= device_count) return fail("choosing the device", status);
  cl_device_id* devices = malloc(device_count * sizeof *devices);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, devices, NULL);
  cl_device_id device = devices[device_index];
  free(devices);

  char text[256] = "";
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof text, text, NULL);
  printf("platform: %s\n", text);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof text, text, NULL);
  printf("device: %s\n", text);
  if (clGetDeviceInfo(device, CL_DEVICE_NODE_NAME_HIVECL, sizeof text, text, NULL) == CL_SUCCESS)
    printf("node: %s\n", text);

  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
  if (!context) return fail("clCreateContext", status);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &status);
  if (!queue) return fail("clCreateCommandQueueWithProperties", status);
  cl_program program = clCreateProgramWithSource(context, 1, &kernel_source, NULL, &status);
  if (!program) return fail("clCreateProgramWithSource", status);
  if ((status = clBuildProgram(program, 1, &device, NULL, NULL, NULL)) != CL_SUCCESS) return fail("clBuildProgram", status);
  cl_kernel kernel = clCreateKernel(program, "vecadd", &status);
  if (!kernel) return fail("clCreateKernel", status);

  const size_t bytes = (size_t)n * sizeof(float);
  float* a = malloc(bytes);
  float* b = malloc(bytes);
  float* c = malloc(bytes);
  for (cl_uint i = 0; i < n; ++i) {
    a[i] = (float)i;
    b[i] = (float)(2 * (i % 1000));
  }
  cl_mem buffer_a = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, a, &status);
  cl_mem buffer_b = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, NULL, &status);
  cl_mem buffer_c = clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, NULL, &status);
  if (!buffer_a || !buffer_b || !buffer_c) return fail("clCreateBuffer", status);
  if ((status = clEnqueueWriteBuffer(queue, buffer_b, CL_FALSE, 0, bytes, b, 0, NULL, NULL)) != CL_SUCCESS)
    return fail("clEnqueueWriteBuffer", status);
  clSetKernelArg(kernel, 0, sizeof buffer_a, &buffer_a);
  clSetKernelArg(kernel, 1, sizeof buffer_b, &buffer_b);
  clSetKernelArg(kernel, 2, sizeof buffer_c, &buffer_c);
  clSetKernelArg(kernel, 3, sizeof n, &n);
  const size_t global = ((size_t)n + 63) / 64 * 64;
  cl_event done;
  if ((status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, &done)) != CL_SUCCESS)
    return fail("clEnqueueNDRangeKernel", status);
  if ((status = clEnqueueReadBuffer(queue, buffer_c, CL_TRUE, 0, bytes, c, 1, &done, NULL)) != CL_SUCCESS)
    return fail("clEnqueueReadBuffer", status);

  cl_uint wrong = 0;
  double checksum = 0;
  for (cl_uint i = 0; i < n; ++i) {
    if (c[i] != a[i] + b[i]) ++wrong;
    checksum += c[i];
  }
  printf("result: %u elements, %u wrong, checksum %.1f\n", n, wrong, checksum);

  clReleaseEvent(done);
  clReleaseMemObject(buffer_a);
  clReleaseMemObject(buffer_b);
  clReleaseMemObject(buffer_c);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(a);
  free(b);
  free(c);
  return wrong == 0 ? 0 : 1;
}
