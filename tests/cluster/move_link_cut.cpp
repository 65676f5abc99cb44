// A buffer moved through this process (from this machine's in-process device to a proxy's)
// whose target host vanishes while the move is under way (enqueued, its data not yet sent; the
// link cut: no TCP reset) must fail the command that waits for it within the peer timeout, and
// leave HiveCL's move threads free: a move to another host's device afterwards lands whole.
//   move-link-cut "COMMAND THAT CUTS THE LINK" "COMMAND THAT RESTORES IT" LIMIT_SECONDS
// Devices (HIVECL_NODES="THIS_HOST,LIVE_HOST,CUT_HOST"): the in-process one first, then the live
// host's, then the cut host's.
#include <CL/cl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "platform_named.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t bytes = size_t{64} << 20;  // several of the pieces a move goes in

[[noreturn]] void fail(const char* what, cl_int status) {
  std::fprintf(stderr, "move-link-cut: %s (%d)\n", what, status);
  std::exit(1);
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail(what, status);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Spins for a while before it writes one byte: a writer the move must wait for, so that the link
// is cut before the move starts (the rounds take a tenth of a second or more on any CPU).
const char* slow_writer_source = R"(
__kernel void slow_write(__global uchar* data, uint rounds, uchar value) {
  uint x = 1;
  for (uint i = 0; i < rounds; ++i) x = x * 1664525u + 1013904223u;
  data[0] = value + (uchar)(x == 7u);  // uses x: the loop stays
}
)";

// A context over `from` and `to` and a buffer filled with `pattern` on `from`, to be moved to `to`.
struct Move {
  cl_context context = nullptr;
  cl_command_queue from = nullptr, to = nullptr;
  cl_mem buffer = nullptr;
  cl_event moved = nullptr;

  Move(cl_device_id from_device, cl_device_id to_device, cl_uchar pattern) {
    const cl_device_id devices[2] = {from_device, to_device};
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 2, devices, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    from = clCreateCommandQueueWithProperties(context, from_device, nullptr, &status);
    check(status, "clCreateCommandQueueWithProperties");
    to = clCreateCommandQueueWithProperties(context, to_device, nullptr, &status);
    check(status, "clCreateCommandQueueWithProperties");
    buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
    check(status, "clCreateBuffer");
    check(clEnqueueFillBuffer(from, buffer, &pattern, 1, 0, bytes, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    check(clFinish(from), "clFinish");
  }
  // Writes the buffer's first byte on `from` after a spin, without waiting for it.
  void write_slowly(cl_uchar value) {
    cl_int status = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context, 1, &slow_writer_source, nullptr, &status);
    check(status, "clCreateProgramWithSource");
    check(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr), "clBuildProgram");
    cl_kernel kernel = clCreateKernel(program, "slow_write", &status);
    check(status, "clCreateKernel");
    const cl_uint rounds = 300'000'000;
    const size_t one = 1;
    check(clSetKernelArg(kernel, 0, sizeof buffer, &buffer), "clSetKernelArg");
    check(clSetKernelArg(kernel, 1, sizeof rounds, &rounds), "clSetKernelArg");
    check(clSetKernelArg(kernel, 2, sizeof value, &value), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(from, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFlush(from), "clFlush");
    clReleaseKernel(kernel);
    clReleaseProgram(program);
  }
  // Moves the buffer to `to` (a migration there), without waiting for it.
  void start() {
    if (moved) clReleaseEvent(moved);
    check(clEnqueueMigrateMemObjects(to, 1, &buffer, 0, 0, nullptr, &moved), "clEnqueueMigrateMemObjects");
    check(clFlush(to), "clFlush");
  }
  // The migration's status once it has ended.
  cl_int ended() {
    const cl_int waited = clWaitForEvents(1, &moved);
    cl_int status = CL_COMPLETE;
    clGetEventInfo(moved, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    return waited != CL_SUCCESS ? waited : status;
  }
  ~Move() {  // on a lost host these calls fail; the objects go all the same
    if (moved) clReleaseEvent(moved);
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(from);
    clReleaseCommandQueue(to);
    clReleaseContext(context);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fail("usage: move-link-cut CUT RESTORE LIMIT_SECONDS", CL_INVALID_VALUE);
  const double limit = std::atof(argv[3]);
  cl_platform_id platform = hivecl::test::platform_named("HiveCL");
  if (!platform) fail("no HiveCL platform", CL_INVALID_PLATFORM);
  cl_device_id devices[3] = {};
  cl_uint found = 0;
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 3, devices, &found), "clGetDeviceIDs");
  if (found != 3) fail("expected three devices: in-process, the live host's, the cut host's", CL_DEVICE_NOT_FOUND);

  cl_int status = CL_SUCCESS;
  {
    // A first move while the link is up (HiveCL's queues for moves are made on both sides), then
    // one that waits for the slow writer on this machine's device; the link goes meanwhile, so
    // the second fails on its data.
    Move doomed(devices[0], devices[2], 3);
    doomed.start();
    if ((status = doomed.ended()) != CL_COMPLETE) fail("the move before the cut failed", status);
    doomed.write_slowly(4);
    doomed.start();
    const auto cut = Clock::now();
    if (std::system(argv[1]) != 0) fail("cutting the link", CL_INVALID_OPERATION);
    status = doomed.ended();
    const double seconds = seconds_since(cut);
    std::printf("move to the cut host: status %d after %.2f s\n", status, seconds);
    if (status >= 0) fail("the move to the cut host did not fail", status);
    if (seconds > limit) fail("the move failed after the time limit", status);
  }
  const auto later = Clock::now();
  Move live(devices[0], devices[1], 9);
  live.start();
  status = live.ended();
  std::vector<cl_uchar> landed(bytes);
  if (status == CL_COMPLETE)
    status = clEnqueueReadBuffer(live.to, live.buffer, CL_TRUE, 0, bytes, landed.data(), 0, nullptr, nullptr);
  std::printf("move to the live host afterwards: status %d after %.2f s\n", status, seconds_since(later));
  if (std::system(argv[2]) != 0) fail("restoring the link", CL_INVALID_OPERATION);
  if (status < 0) fail("the move to the live host failed", status);
  for (cl_uchar value : landed)
    if (value != 9) fail("the move to the live host brought wrong data", CL_INVALID_VALUE);
  return 0;
}
