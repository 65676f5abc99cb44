// Differential API tests: the same test body runs once on the native platform and once
// through HiveCL (whose proxy serves that same native platform). The body records what
// it observes (statuses, values, checksums) through a Probe; both runs must record the
// same sequence. Bodies may also assert facts that must hold on both sides.
//
// The native platform is named by HIVECL_TEST_NATIVE_PLATFORM (default: PoCL's,
// "Portable Computing Language"); tests/with-cluster.sh starts the cluster.
#pragma once

#include <CL/cl.h>

#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"

namespace hivecl::test {

struct Target {
  std::string name;  // "native" or "HiveCL"
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  bool hivecl = false;
};

class Probe {
 public:
  explicit Probe(const Target& target) : target_(target) {}

  const Target& target() const { return target_; }
  cl_platform_id platform() const { return target_.platform; }
  cl_device_id device() const { return target_.device; }
  bool hivecl() const { return target_.hivecl; }

  void record(const std::string& what, const std::string& value) { trace_.emplace_back(what, value); }
  // Records a status under `what` and hands it back.
  cl_int status(const std::string& what, cl_int code);
  template <class T>
  void value(const std::string& what, const T& value) {
    std::ostringstream text;
    text << value;
    record(what, text.str());
  }
  const std::vector<std::pair<std::string, std::string>>& trace() const { return trace_; }

 private:
  const Target& target_;
  std::vector<std::pair<std::string, std::string>> trace_;
};

// Runs `body` on both sides and checks that their traces agree entry by entry.
void run_differential(const std::function<void(Probe&)>& body);

// Runs `body` on the HiveCL side only (what has no native counterpart).
void run_hivecl(const std::function<void(Probe&)>& body);

// Whether the HiveCL side's device is served in-process (tests/local-only.sh) rather than by a proxy.
bool hivecl_in_process();

std::string status_name(cl_int status);

// Releases an OpenCL object when the test leaves its scope, even through a failed REQUIRE.
template <class Handle, cl_int (*Release)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Owned() {
    if (handle_) Release(handle_);
  }
  Handle get() const { return handle_; }
  Handle* out() { return &handle_; }
  operator Handle() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using Context = Owned<cl_context, clReleaseContext>;
using Queue = Owned<cl_command_queue, clReleaseCommandQueue>;
using Buffer = Owned<cl_mem, clReleaseMemObject>;
using Program = Owned<cl_program, clReleaseProgram>;
using Kernel = Owned<cl_kernel, clReleaseKernel>;
using Event = Owned<cl_event, clReleaseEvent>;

// A context and an in-order queue on the probe's device (REQUIREs success).
struct Setup {
  Context context;
  Queue queue;
};
Setup make_setup(Probe& probe, cl_command_queue_properties properties = 0);

// A program built from `source` for the probe's device (REQUIREs success).
Program build_program(Probe& probe, cl_context context, const char* source, const char* options = "");

// A stable, printable summary of bytes (for traces of data read back).
std::string checksum(const void* data, size_t size);

// The event's execution status (REQUIREs the query to succeed).
cl_int execution_status(cl_event event);

}  // namespace hivecl::test

#define DIFFERENTIAL_TEST(function, description, tags)                             \
  static void function(hivecl::test::Probe& probe);                               \
  TEST_CASE(description, tags) { hivecl::test::run_differential(function); }      \
  static void function([[maybe_unused]] hivecl::test::Probe& probe)

#define HIVECL_TEST(function, description, tags)                                   \
  static void function(hivecl::test::Probe& probe);                               \
  TEST_CASE(description, tags) { hivecl::test::run_hivecl(function); }            \
  static void function([[maybe_unused]] hivecl::test::Probe& probe)
