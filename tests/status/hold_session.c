/* Opens a session on the first HiveCL device and holds it: a context, a queue and a buffer
 * of SIZE bytes written from the host and read back; prints "ready" and keeps everything
 * until its standard input closes. For the status test (live-session.sh).
 *   hold-session SIZE
 */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, cl_int status) {
  fprintf(stderr, "hold-session: %s failed (%d)\n", what, status);
  return 1;
}

int main(int argc, char** argv) {
  const size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 1u << 20;
  cl_platform_id platform;
  cl_device_id device;
  cl_int status = clGetPlatformIDs(1, &platform, NULL);
  if (status != CL_SUCCESS) return fail("clGetPlatformIDs", status);
  status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
  if (status != CL_SUCCESS) return fail("clGetDeviceIDs", status);
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
  if (status != CL_SUCCESS) return fail("clCreateContext", status);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &status);
  if (status != CL_SUCCESS) return fail("clCreateCommandQueue", status);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &status);
  if (status != CL_SUCCESS) return fail("clCreateBuffer", status);
  char* data = malloc(size);
  memset(data, 7, size);
  status = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, size, data, 0, NULL, NULL);
  if (status != CL_SUCCESS) return fail("clEnqueueWriteBuffer", status);
  status = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, data, 0, NULL, NULL);
  if (status != CL_SUCCESS) return fail("clEnqueueReadBuffer", status);
  printf("ready\n");
  fflush(stdout);
  while (getchar() != EOF) {}
  free(data);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
