// Faults with real processes: a client killed while it holds objects or moves data (the
// proxy releases its session and keeps serving), and a proxy killed under a client (every
// call fails within the peer timeout, nothing hangs). Runs under tests/with-cluster.sh.
#include <CL/cl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string cluster_dir() {
  const char* dir = std::getenv("HIVECL_CLUSTER_DIR");
  REQUIRE(dir);
  return dir;
}

std::string proxy_log() {
  std::ifstream in(cluster_dir() + "/logs/proxy-localhost.log");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Records are named <node>-<pid>.proxy.
pid_t proxy_pid() {
  for (const auto& entry : std::filesystem::directory_iterator(cluster_dir() + "/proxies")) {
    const std::string name = entry.path().stem().string();
    if (entry.path().extension() == ".proxy") return std::stoi(name.substr(name.rfind('-') + 1));
  }
  FAIL("no proxy record in " << cluster_dir());
  return -1;
}

// Runs fault-client in `mode` and waits for its "ready" line.
struct FaultClient {
  pid_t pid = -1;
  FILE* output = nullptr;

  explicit FaultClient(const char* mode) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    const std::string program = FAULT_CLIENT_PATH;
    std::vector<char*> argv{const_cast<char*>(program.c_str()), const_cast<char*>(mode), nullptr};
    REQUIRE(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    output = ::fdopen(pipe_fds[0], "r");
    // Other lines may come first (notices Open MPI prints on some machines).
    char line[512] = {};
    bool ready = false;
    while (!ready && std::fgets(line, sizeof line, output)) ready = std::string(line).starts_with("ready");
    REQUIRE(ready);
  }
  void kill() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~FaultClient() {
    if (pid > 0) kill();
    if (output) std::fclose(output);
  }
};

// How many sessions of a fault-client (8 objects) the proxy has released, by its log.
size_t released_sessions() {
  const std::string log = proxy_log();
  const std::string line = " ended: released 8 objects";
  size_t count = 0;
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++count;
  return count;
}

void expect_session_released(size_t released_before) {
  const auto deadline = Clock::now() + 10s;
  while (released_sessions() <= released_before && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  CHECK(released_sessions() == released_before + 1);
}

// HiveCL's device, a context and a queue on it (libhivecl is linked: the only platform is HiveCL).
struct Setup {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;

  Setup() {
    cl_platform_id platform = nullptr;
    REQUIRE(clGetPlatformIDs(1, &platform, nullptr) == CL_SUCCESS);
    REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
  }
};

// One round of real work through the proxy, checked.
void work_once() {
  const Setup setup;
  const cl_context context = setup.context;
  const cl_command_queue queue = setup.queue;
  cl_int status = CL_SUCCESS;
  std::vector<int> in(1000, 7), out(1000, 0);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, in.size() * sizeof(int), in.data(), &status);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, out.size() * sizeof(int), out.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  CHECK(out == in);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

}  // namespace

TEST_CASE("a client killed while holding objects has them all released", "[fault][client-death]") {
  const size_t before = released_sessions();
  FaultClient client("hold");
  client.kill();
  expect_session_released(before);
  work_once();
}

TEST_CASE("a client killed with a command waiting for its user event has everything released",
          "[fault][client-death]") {
  const size_t before = released_sessions();
  FaultClient client("gated");
  client.kill();
  expect_session_released(before);
  work_once();
}

TEST_CASE("a client killed in the middle of transfers does not disturb the proxy", "[fault][client-death]") {
  const size_t before = released_sessions();
  FaultClient client("transfer");
  std::this_thread::sleep_for(300ms);  // several 64 MiB transfers under way
  client.kill();
  expect_session_released(before);
  CHECK(::kill(proxy_pid(), 0) == 0);
  work_once();
}

// Kills the cluster's proxy: run it in a cluster of its own (see tests/meson.build).
TEST_CASE("a proxy killed under a client fails its calls within the peer timeout", "[fault][proxy-death]") {
  const Setup setup;
  cl_device_id device = setup.device;
  const cl_context context = setup.context;
  const cl_command_queue queue = setup.queue;
  cl_int status = CL_SUCCESS;
  const size_t size = 32u << 20;
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_event marker = nullptr;
  REQUIRE(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) == CL_SUCCESS);

  // Blocking reads and writes without end, on two queues, until they fail: data flows both
  // ways when the proxy dies (with Open MPI's ob1, a failed send aborted the application).
  cl_command_queue write_queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  const auto until_failure = [&](cl_command_queue on, bool reads) {
    std::vector<char> data(size);
    cl_int result = CL_SUCCESS;
    while (result == CL_SUCCESS)
      result = reads ? clEnqueueReadBuffer(on, buffer, CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr)
                     : clEnqueueWriteBuffer(on, buffer, CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr);
    return std::make_pair(result, Clock::now());
  };
  auto reader = std::async(std::launch::async, until_failure, queue, true);
  auto writer = std::async(std::launch::async, until_failure, write_queue, false);
  std::this_thread::sleep_for(300ms);
  const auto killed_at = Clock::now();
  REQUIRE(::kill(proxy_pid(), SIGKILL) == 0);
  for (auto* transfers : {&reader, &writer}) {
    REQUIRE(transfers->wait_for(5s) == std::future_status::ready);
    const auto [transfer_status, failed_at] = transfers->get();
    CHECK(transfer_status == CL_OUT_OF_RESOURCES);
    CHECK(failed_at - killed_at < 5s);
  }
  std::vector<char> data(size);

  // Every later call on the proxy's objects fails at once, and the device says it is gone.
  CHECK(clFinish(queue) == CL_OUT_OF_RESOURCES);
  CHECK(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, 16, data.data(), 0, nullptr, nullptr) == CL_OUT_OF_RESOURCES);
  cl_mem another = clCreateBuffer(context, CL_MEM_READ_WRITE, 16, nullptr, &status);
  CHECK(another == nullptr);
  CHECK(status == CL_OUT_OF_RESOURCES);
  cl_int execution = CL_COMPLETE;
  CHECK(clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr) ==
        CL_SUCCESS);
  CHECK(execution < 0);
  cl_bool available = CL_TRUE;
  CHECK(clGetDeviceInfo(device, CL_DEVICE_AVAILABLE, sizeof available, &available, nullptr) == CL_SUCCESS);
  CHECK(available == CL_FALSE);
  cl_context another_context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  CHECK(another_context == nullptr);
  CHECK(status == CL_DEVICE_NOT_AVAILABLE);
  // Releasing objects of a dead proxy is fine.
  CHECK(clReleaseEvent(marker) == CL_SUCCESS);
  CHECK(clReleaseMemObject(buffer) == CL_SUCCESS);
  CHECK(clReleaseCommandQueue(queue) == CL_SUCCESS);
  CHECK(clReleaseCommandQueue(write_queue) == CL_SUCCESS);
  CHECK(clReleaseContext(context) == CL_SUCCESS);
}
