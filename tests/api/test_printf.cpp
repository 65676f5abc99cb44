// What kernels print (printf) reaches the application's standard output, natively and through
// HiveCL (a proxy sends it to its client before the reply that ends the wait), by the time the
// wait for the kernel returns.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

// Takes this process's standard output into a file of its own while it lives.
class StdoutCapture {
 public:
  StdoutCapture() {
    std::fflush(stdout);
    file_ = memfd_create("stdout-capture", MFD_CLOEXEC);
    REQUIRE(file_ >= 0);
    saved_ = dup(STDOUT_FILENO);
    REQUIRE(saved_ >= 0);
    REQUIRE(dup2(file_, STDOUT_FILENO) == STDOUT_FILENO);
  }
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;
  ~StdoutCapture() {
    std::fflush(stdout);
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
    close(file_);
  }
  // Everything printed so far.
  std::string text() const {
    std::fflush(stdout);
    std::string text;
    char piece[4096];
    for (off_t at = 0;;) {
      const ssize_t got = pread(file_, piece, sizeof piece, at);
      if (got <= 0) return text;
      text.append(piece, static_cast<size_t>(got));
      at += got;
    }
  }

 private:
  int file_ = -1;
  int saved_ = -1;
};

constexpr const char* say_source = R"(
kernel void say(int value) { printf("kernel says %d\n", value); }
kernel void count(int lines) { for (int i = 0; i < lines; ++i) printf("line %d of %d\n", i, lines); }
)";

Kernel make_kernel(Probe& probe, cl_program program, const char* name) {
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, name, &status));
  probe.status(std::string("clCreateKernel ") + name, status);
  REQUIRE(status == CL_SUCCESS);
  return kernel;
}

// Launches `say` once per value, one work-item each, in order.
void launch_says(Probe& probe, cl_command_queue queue, cl_kernel say, const std::vector<cl_int>& values,
                 cl_event* last = nullptr) {
  const size_t one = 1;
  for (size_t i = 0; i < values.size(); ++i) {
    probe.status("clSetKernelArg", clSetKernelArg(say, 0, sizeof values[i], &values[i]));
    const bool is_last = i + 1 == values.size();
    probe.status("clEnqueueNDRangeKernel",
                 clEnqueueNDRangeKernel(queue, say, 1, nullptr, &one, nullptr, 0, nullptr, is_last ? last : nullptr));
  }
}

std::string says(const std::vector<cl_int>& values) {
  std::string text;
  for (const cl_int value : values) text += "kernel says " + std::to_string(value) + "\n";
  return text;
}

// What `capture` holds once `expected` is there, waiting up to `patience` for it.
std::string captured(const StdoutCapture& capture, const std::string& expected,
                     std::chrono::seconds patience = std::chrono::seconds(0)) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  std::string text = capture.text();
  while (text.size() < expected.size() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = capture.text();
  }
  return text;
}

}  // namespace

DIFFERENTIAL_TEST(printf_by_wait, "what kernels print is on standard output when the wait for them returns",
                  "[printf]") {
  Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, say_source);
  Kernel say = make_kernel(probe, program, "say");
  const StdoutCapture capture;

  launch_says(probe, setup.queue, say, {1, 2, 3});
  probe.status("clFinish", clFinish(setup.queue));
  std::string expected = says({1, 2, 3});
  std::string text = captured(capture, expected);
  CHECK(text == expected);
  probe.record("after clFinish", text);

  Event last;
  launch_says(probe, setup.queue, say, {4, 5}, last.out());
  probe.status("clWaitForEvents", clWaitForEvents(1, last.out()));
  expected += says({4, 5});
  text = captured(capture, expected);
  CHECK(text == expected);
  probe.record("after clWaitForEvents", text);

  // A blocking read after the kernel on an in-order queue waits for it too.
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(setup.context, CL_MEM_READ_WRITE, sizeof(cl_int), nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  launch_says(probe, setup.queue, say, {6});
  cl_int value = 0;
  probe.status("blocking read",
               clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
  expected += says({6});
  text = captured(capture, expected);
  CHECK(text == expected);
  probe.record("after a blocking read", text);
}

DIFFERENTIAL_TEST(printf_lines, "a kernel printing many lines prints each of them once, in order", "[printf]") {
  Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, say_source);
  Kernel count = make_kernel(probe, program, "count");
  const StdoutCapture capture;
  const cl_int lines = 20000;  // more than one frame of text through a proxy
  probe.status("clSetKernelArg", clSetKernelArg(count, 0, sizeof lines, &lines));
  const size_t one = 1;
  probe.status("clEnqueueNDRangeKernel",
               clEnqueueNDRangeKernel(setup.queue, count, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  probe.status("clFinish", clFinish(setup.queue));
  std::string expected;
  for (int i = 0; i < lines; ++i) expected += "line " + std::to_string(i) + " of " + std::to_string(lines) + "\n";
  const std::string text = captured(capture, expected);
  CHECK(text.size() == expected.size());
  const bool same = text == expected;
  CHECK(same);
  probe.value("all lines, in order", same);
}

DIFFERENTIAL_TEST(printf_from_binary, "a program made from a binary prints as the program it came from",
                  "[printf]") {
  Setup setup = make_setup(probe);
  Program built = build_program(probe, setup.context, say_source);
  size_t size = 0;
  REQUIRE(clGetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) == CL_SUCCESS);
  std::vector<unsigned char> binary(size);
  unsigned char* pointer = binary.data();
  REQUIRE(clGetProgramInfo(built, CL_PROGRAM_BINARIES, sizeof pointer, &pointer, nullptr) == CL_SUCCESS);
  const unsigned char* binaries[] = {binary.data()};
  const cl_device_id device = probe.device();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  Program program(clCreateProgramWithBinary(setup.context, 1, &device, &size, binaries, &binary_status, &status));
  probe.status("clCreateProgramWithBinary", status);
  REQUIRE(status == CL_SUCCESS);
  probe.status("clBuildProgram", clBuildProgram(program, 1, &device, "", nullptr, nullptr));
  Kernel say = make_kernel(probe, program, "say");
  const StdoutCapture capture;
  launch_says(probe, setup.queue, say, {7, 8});
  probe.status("clFinish", clFinish(setup.queue));
  const std::string text = captured(capture, says({7, 8}));
  CHECK(text == says({7, 8}));
  probe.record("after clFinish", text);
}

// The proxy looks for printf in the programs it is given: one whose source never names it (the
// name made by the preprocessor) still prints to the one client of the proxy, soon after the wait.
DIFFERENTIAL_TEST(printf_unnamed, "a kernel whose source does not name printf still prints", "[printf]") {
  constexpr const char* hidden_source = R"(
#define JOIN(a, b) a##b
kernel void say(int value) { JOIN(pri, ntf)("kernel says %d\n", value); }
)";
  Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, hidden_source);
  Kernel say = make_kernel(probe, program, "say");
  const StdoutCapture capture;
  launch_says(probe, setup.queue, say, {9});
  probe.status("clFinish", clFinish(setup.queue));
  const std::string text = captured(capture, says({9}), std::chrono::seconds(10));
  CHECK(text == says({9}));
  probe.record("soon after clFinish", text);
}
