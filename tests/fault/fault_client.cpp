// A HiveCL client for the fault tests to kill. It prints "ready <objects>" once its
// objects exist, then either holds them ("hold"), holds them with a write waiting for a user
// event it never sets ("gated"), moves data without end ("transfer": writes, reads and buffers
// made from its memory), runs a kernel of
// some seconds ("kernel"), holds 400 more buffers of 256 KiB and 400 events ("many"), or
// exits ("probe": can this client work at all?).
#include <CL/cl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* source =
    "__kernel void twice(__global int* data) { data[get_global_id(0)] *= 2; }\n"
    // A chain of dependent steps the compiler cannot shorten: seconds of work for 2 cores.
    "__kernel void spin(__global int* data, int steps) {\n"
    "  int x = data[get_global_id(0)];\n"
    "  for (int i = 0; i < steps; ++i) x = x * 1103515245 + data[(x >> 8) & 15];\n"
    "  data[get_global_id(0)] = x;\n"
    "}\n";

int fail(const char* what, cl_int status) {
  std::fprintf(stderr, "fault-client: %s failed (%d)\n", what, status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string mode = argv[1];
  const bool transfer = mode == "transfer";
  const bool gated = mode == "gated";
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
  if (mode == "probe") return 0;
  if (mode == "kernel") {
    cl_kernel spin = clCreateKernel(program, "spin", &status);
    const cl_int steps = 100'000'000;
    clSetKernelArg(spin, 0, sizeof buffers[0], &buffers[0]);
    clSetKernelArg(spin, 1, sizeof steps, &steps);
    const size_t global = 16;
    if ((status = clEnqueueNDRangeKernel(queue, spin, 1, nullptr, &global, nullptr, 0, nullptr, nullptr)) != CL_SUCCESS)
      return fail("clEnqueueNDRangeKernel", status);
    clFlush(queue);
    std::printf("running\n");
    std::fflush(stdout);
  }
  if (mode == "many") {
    for (int i = 0; i < 400; ++i) {
      clCreateBuffer(context, CL_MEM_READ_WRITE, 256u << 10, nullptr, &status);
      clEnqueueMarkerWithWaitList(queue, 0, nullptr, &event);
    }
    clFinish(queue);
    std::printf("holding\n");
    std::fflush(stdout);
  }
  while (true) {
    if (!transfer) {
      ::pause();
      continue;
    }
    clEnqueueWriteBuffer(queue, buffers[0], CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr);
    clEnqueueReadBuffer(queue, buffers[0], CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr);
    // Through a proxy of this node, the proxy reads a new buffer's contents from this process.
    clReleaseMemObject(clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, size, data.data(), &status));
  }
}
