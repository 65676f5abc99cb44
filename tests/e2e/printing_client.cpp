// A client for kernel-output.sh: on the first platform, launches `say` COUNT times (one work-item,
// the launch's number as its value) and waits for each. With `print` its kernel prints
// "client PID says N"; with `hidden` too, from a source that never names printf (a macro makes
// the name); with `unended` it prints "client PID says N " and never ends a line; with `quiet`
// it prints nothing. What it reports itself goes to stderr, so that its
// standard output holds only what its kernels printed.
#include <CL/cl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../first_queue.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "print" && mode != "hidden" && mode != "unended" && mode != "quiet") {
    std::fprintf(stderr, "usage: printing-client print|hidden|unended|quiet COUNT\n");
    return 2;
  }
  const int count = std::atoi(argv[2]);
  const FirstQueue opened = open_first_queue();
  if (opened.status != CL_SUCCESS) {
    std::fprintf(stderr, "no queue: %d\n", opened.status);
    return 1;
  }
  const char* source =
      mode == "print"    ? "kernel void say(int pid, int n) { printf(\"client %d says %d\\n\", pid, n); }"
      : mode == "hidden" ? "#define JOIN(a, b) a##b\n"
                           "kernel void say(int pid, int n) { JOIN(pri, ntf)(\"client %d says %d\\n\", pid, n); }"
      : mode == "unended" ? "kernel void say(int pid, int n) { printf(\"client %d says %d \", pid, n); }"
                         : "kernel void say(int pid, int n) { }";
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(opened.context, 1, &source, nullptr, &status);
  if (status == CL_SUCCESS) status = clBuildProgram(program, 1, &opened.device, "", nullptr, nullptr);
  cl_kernel kernel = status == CL_SUCCESS ? clCreateKernel(program, "say", &status) : nullptr;
  const cl_int pid = getpid();
  if (status == CL_SUCCESS) status = clSetKernelArg(kernel, 0, sizeof pid, &pid);
  const size_t one = 1;
  for (cl_int n = 0; n < count && status == CL_SUCCESS; ++n) {
    status = clSetKernelArg(kernel, 1, sizeof n, &n);
    if (status == CL_SUCCESS) status = clEnqueueNDRangeKernel(opened.queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr);
    if (status == CL_SUCCESS) status = clFinish(opened.queue);
  }
  std::fprintf(stderr, "printing-client %s %d: pid %d, status %d\n", argv[1], count, pid, status);
  if (kernel) clReleaseKernel(kernel);
  if (program) clReleaseProgram(program);
  clReleaseCommandQueue(opened.queue);
  clReleaseContext(opened.context);
  return status == CL_SUCCESS ? 0 : 1;
}
