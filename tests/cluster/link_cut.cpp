// A host that vanishes from the network without a word (its link cut: no TCP reset, no
// closed socket) must fail the calls on its devices within the peer timeout, not hang them.
//   link-cut "COMMAND THAT CUTS THE LINK" "COMMAND THAT RESTORES IT" LIMIT_SECONDS
// The link comes back before this process exits, so that the proxy sees its connections close
// (with the link down, they would linger on the proxy's side until MPI_Finalize).
// Uses the first HiveCL device (select the host with HIVECL_NODES).
#include <CL/cl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int fail(const char* what, cl_int status) {
  std::fprintf(stderr, "link-cut: %s (%d)\n", what, status);
  return 1;
}

cl_int round_trip(cl_command_queue queue, cl_mem buffer, std::vector<char>& data) {
  cl_int status = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, data.size(), data.data(), 0, nullptr, nullptr);
  if (status != CL_SUCCESS) return status;
  return clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, data.size(), data.data(), 0, nullptr, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage: link-cut CUT RESTORE LIMIT_SECONDS", CL_INVALID_VALUE);
  const double limit = std::atof(argv[3]);
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
  std::vector<char> data(1 << 20, 1);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, data.size(), nullptr, &status);
  if (!buffer) return fail("clCreateBuffer", status);
  for (int i = 0; i < 10; ++i)
    if ((status = round_trip(queue, buffer, data)) != CL_SUCCESS) return fail("a transfer before the cut", status);

  using Clock = std::chrono::steady_clock;
  const auto cut = Clock::now();
  if (std::system(argv[1]) != 0) return fail("cutting the link", CL_INVALID_OPERATION);
  while ((status = round_trip(queue, buffer, data)) == CL_SUCCESS) {
    if (std::chrono::duration<double>(Clock::now() - cut).count() > limit)
      return fail("calls still succeed after the time limit", status);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - cut).count();
  std::printf("link cut: the first call failed after %.2f s with %d\n", seconds, status);
  // Later calls fail at once.
  const auto later = Clock::now();
  const cl_int again = clFinish(queue);
  const double again_seconds = std::chrono::duration<double>(Clock::now() - later).count();
  std::printf("link cut: clFinish afterwards returned %d in %.3f s\n", again, again_seconds);
  if (std::system(argv[2]) != 0) return fail("restoring the link", CL_INVALID_OPERATION);
  if (seconds > limit) return fail("the failure came after the time limit", status);
  if (again == CL_SUCCESS || again_seconds > 1.0) return fail("a later call did not fail at once", again);
  return 0;
}
