// A HiveCL client for the fault tests to kill. It prints "ready <objects>" once its
// objects exist, then either holds them ("hold"), holds them with a write waiting for a user
// event it never sets ("gated"), moves data without end ("transfer": writes, reads and buffers
// made from its memory; "segments": an image mapped and unmapped, and image and rectangle
// transfers to and from a mapped page-locked buffer's memory, which on one node lie in memory
// shared with the proxy), runs a kernel of
// some seconds ("kernel"), holds 400 more buffers of 256 KiB and 400 events ("many"), or
// exits ("probe": can this client work at all? It makes an SVM allocation first, where it
// can). "contexts" makes four contexts in turn and prints each call's status ("context N:
// STATUS"; for rogue-proxy, which answers them).
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

// "segments": a page-locked buffer mapped for good and a 16 MiB image; returns on a failure.
int move_through_segments(cl_context context, cl_command_queue queue, cl_mem buffer) {
  const size_t side = 2048, bytes = side * side * 4;
  const cl_image_format format{CL_RGBA, CL_UNSIGNED_INT8};
  const cl_image_desc desc{.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = side, .image_height = side};
  cl_int status = CL_SUCCESS;
  cl_mem image = clCreateImage(context, CL_MEM_READ_WRITE, &format, &desc, nullptr, &status);
  if (!image) return fail("clCreateImage", status);
  cl_mem pinned = clCreateBuffer(context, CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &status);
  if (!pinned) return fail("clCreateBuffer", status);
  void* host = clEnqueueMapBuffer(queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr,
                                  &status);
  if (!host) return fail("clEnqueueMapBuffer", status);
  std::printf("ready 10\n");  // and the image and the page-locked buffer
  std::fflush(stdout);
  const size_t origin[3] = {0, 0, 0}, region[3] = {side, side, 1};
  const size_t rows[3] = {side, side / 4, 1};  // bytes of a row, rows of the buffer (4 MiB)
  while (true) {
    size_t pitch = 0;
    void* mapping = clEnqueueMapImage(queue, image, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, origin, region, &pitch,
                                      nullptr, 0, nullptr, nullptr, &status);
    if (!mapping) return fail("clEnqueueMapImage", status);
    std::memset(mapping, 3, pitch);
    clEnqueueUnmapMemObject(queue, image, mapping, 0, nullptr, nullptr);
    clEnqueueWriteImage(queue, image, CL_FALSE, origin, region, 0, 0, host, 0, nullptr, nullptr);
    clEnqueueReadImage(queue, image, CL_TRUE, origin, region, 0, 0, host, 0, nullptr, nullptr);
    clEnqueueWriteBufferRect(queue, buffer, CL_FALSE, origin, origin, rows, 0, 0, 2 * side, 0, host, 0, nullptr,
                             nullptr);
    clEnqueueReadBufferRect(queue, buffer, CL_TRUE, origin, origin, rows, 0, 0, 2 * side, 0, host, 0, nullptr,
                            nullptr);
  }
}

int create_contexts(cl_device_id device) {
  for (int i = 1; i <= 4; ++i) {
    cl_int status = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    std::printf("context %d: %d\n", i, status);
    if (context) clReleaseContext(context);
  }
  return 0;
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
  if (mode == "contexts") return create_contexts(device);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  if (!context) return fail("clCreateContext", status);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  if (!queue) return fail("clCreateCommandQueueWithProperties", status);
  const size_t size = transfer ? 64u << 20 : mode == "segments" ? 1u << 20 : 4096;
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
  if (mode == "segments") return move_through_segments(context, queue, buffers[0]);
  // context, queue, three buffers, program, kernel, event
  std::printf("ready 8\n");
  std::fflush(stdout);
  if (mode == "probe") {
    // Shared virtual memory too, with a buffer made on it, where the device has it: like the rest,
    // left to the exit path (the proxy frees them at the session's end).
    if (void* svm = clSVMAlloc(context, CL_MEM_READ_WRITE, 64u << 10, 0))
      clCreateBuffer(context, CL_MEM_USE_HOST_PTR, 4096, svm, &status);
    return 0;
  }
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
