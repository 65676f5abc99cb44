// A HiveCL client for the fault tests to kill. It prints "ready <objects>" once its
// objects exist, then either holds them ("hold"), holds them with a write waiting for a user
// event it never sets ("gated"), or moves data without end ("transfer").
#include <CL/cl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

const char* source = "__kernel void twice(__global int* data) { data[get_global_id(0)] *= 2; }";

int fail(const char* what, cl_int status) {
  std::fprintf(stderr, "fault-client: %s failed (%d)\n", what, status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool transfer = argc > 1 && std::strcmp(argv[1], "transfer") == 0;
  const bool gated = argc > 1 && std::strcmp(argv[1], "gated") == 0;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_int status = clGetPlatformIDs(1, &platform, nullptr);
  if (status != CL_SUCCESS) return fail("clGetPlatformIDs", status);
  if ((status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr)) != CL_SUCCESS)
    return fail("clGetDeviceIDs", status);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  if (!context) return fail("clCreateContext", status);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  if (!queue) return fail("clCreateCommandQueueWithProperties", status);
  const size_t size = transfer ? 64u << 20 : 4096;
  std::vector<cl_mem> buffers;
  for (int i = 0; i < 3; ++i) buffers.push_back(clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &status));
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &status);
  if ((status = clBuildProgram(program, 1, &device, nullptr, nullptr, nullptr)) != CL_SUCCESS)
    return fail("clBuildProgram", status);
  cl_kernel kernel = clCreateKernel(program, "twice", &status);
  if (!kernel) return fail("clCreateKernel", status);
  cl_event event = nullptr;
  std::vector<char> data(size, 1);
  if (gated) {
    event = clCreateUserEvent(context, &status);
    if (!event) return fail("clCreateUserEvent", status);
    clEnqueueWriteBuffer(queue, buffers[0], CL_FALSE, 0, size, data.data(), 1, &event, nullptr);
    clFlush(queue);
  } else {
    clEnqueueMarkerWithWaitList(queue, 0, nullptr, &event);
    clFinish(queue);
  }
  // context, queue, three buffers, program, kernel, event
  std::printf("ready 8\n");
  std::fflush(stdout);
  while (true) {
    if (!transfer) {
      ::pause();
      continue;
    }
    clEnqueueWriteBuffer(queue, buffers[0], CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr);
    clEnqueueReadBuffer(queue, buffers[0], CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr);
  }
}
