// One computation split over every device of the HiveCL platform, each device with its own
// context and queue (devices of different proxies, on different hosts): every slice is
// written, computed and read back concurrently, then the whole result is checked on the host.
//   multi-device MIN_NODES     fails unless the devices span at least MIN_NODES nodes
#include <CL/cl.h>
#include <CL/cl_hivecl.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "platform_named.hpp"

namespace {

const char* source = R"(
__kernel void axpy(float a, __global const float* x, __global float* y) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] + y[i];
})";

[[noreturn]] void fail(const std::string& what, cl_int status) {
  std::fprintf(stderr, "multi-device: %s failed (%d)\n", what.c_str(), status);
  std::exit(1);
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail(what, status);
}

cl_platform_id hivecl_platform() {
  cl_platform_id platform = hivecl::test::platform_named("HiveCL");
  if (!platform) fail("finding the HiveCL platform", CL_INVALID_PLATFORM);
  return platform;
}

// One device's share: its context, queue, kernel and buffers.
struct Slice {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem x = nullptr, y = nullptr;
  size_t first = 0, count = 0;
  cl_event done = nullptr;
};

Slice open_slice(cl_device_id device, size_t first, size_t count) {
  Slice slice{device};
  slice.first = first;
  slice.count = count;
  cl_int status = CL_SUCCESS;
  slice.context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  check(status, "clCreateContext");
  slice.queue = clCreateCommandQueueWithProperties(slice.context, device, nullptr, &status);
  check(status, "clCreateCommandQueueWithProperties");
  cl_program program = clCreateProgramWithSource(slice.context, 1, &source, nullptr, &status);
  check(clBuildProgram(program, 1, &device, nullptr, nullptr, nullptr), "clBuildProgram");
  slice.kernel = clCreateKernel(program, "axpy", &status);
  check(status, "clCreateKernel");
  clReleaseProgram(program);
  slice.x = clCreateBuffer(slice.context, CL_MEM_READ_ONLY, count * sizeof(float), nullptr, &status);
  check(status, "clCreateBuffer");
  slice.y = clCreateBuffer(slice.context, CL_MEM_READ_WRITE, count * sizeof(float), nullptr, &status);
  check(status, "clCreateBuffer");
  return slice;
}

// Non-blocking throughout, so that the devices work at the same time.
void enqueue(Slice& slice, float a, const std::vector<float>& x, std::vector<float>& y) {
  const size_t bytes = slice.count * sizeof(float);
  check(clEnqueueWriteBuffer(slice.queue, slice.x, CL_FALSE, 0, bytes, &x[slice.first], 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  check(clEnqueueWriteBuffer(slice.queue, slice.y, CL_FALSE, 0, bytes, &y[slice.first], 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  check(clSetKernelArg(slice.kernel, 0, sizeof a, &a), "clSetKernelArg");
  check(clSetKernelArg(slice.kernel, 1, sizeof slice.x, &slice.x), "clSetKernelArg");
  check(clSetKernelArg(slice.kernel, 2, sizeof slice.y, &slice.y), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(slice.queue, slice.kernel, 1, nullptr, &slice.count, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  check(clEnqueueReadBuffer(slice.queue, slice.y, CL_FALSE, 0, bytes, &y[slice.first], 0, nullptr, &slice.done),
        "clEnqueueReadBuffer");
  check(clFlush(slice.queue), "clFlush");
}

std::string node_of(cl_device_id device) {
  char node[256] = {};
  check(clGetDeviceInfo(device, CL_DEVICE_NODE_NAME_HIVECL, sizeof node, node, nullptr), "clGetDeviceInfo");
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t min_nodes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1;
  cl_platform_id platform = hivecl_platform();
  cl_uint device_count = 0;
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count), "clGetDeviceIDs");
  std::vector<cl_device_id> devices(device_count);
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, devices.data(), nullptr), "clGetDeviceIDs");

  const size_t per_device = 1 << 18;
  const size_t total = per_device * device_count;
  const float a = 3.0f;
  std::vector<float> x(total), y(total);
  for (size_t i = 0; i < total; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = static_cast<float>(i % 7);
  }
  std::vector<Slice> slices;
  std::set<std::string> nodes;
  for (cl_uint d = 0; d < device_count; ++d) {
    slices.push_back(open_slice(devices[d], d * per_device, per_device));
    nodes.insert(node_of(devices[d]));
    std::printf("device %u on node %s: elements %zu..%zu\n", d, node_of(devices[d]).c_str(), d * per_device,
                (d + 1) * per_device - 1);
  }
  std::vector<float> result = y;
  for (Slice& slice : slices) enqueue(slice, a, x, result);
  for (Slice& slice : slices) check(clWaitForEvents(1, &slice.done), "clWaitForEvents");

  size_t wrong = 0;
  for (size_t i = 0; i < total; ++i)
    if (result[i] != a * x[i] + y[i]) ++wrong;
  std::printf("%u devices on %zu nodes: %zu elements, %zu wrong\n", device_count, nodes.size(), total, wrong);
  if (nodes.size() < min_nodes) {
    std::fprintf(stderr, "multi-device: expected devices on at least %zu nodes\n", min_nodes);
    return 1;
  }
  return wrong == 0 ? 0 : 1;
}
