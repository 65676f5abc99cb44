// A client of a proxy on its node that breaks its own shared control channel
// (transport/control_channel.hpp): once connected, it writes an impossible count into the
// ring its requests go through, then makes a call. The proxy must end its session (not
// crash, not hang) and the call must fail with an error instead of waiting for ever.
// Prints the call's status; exit status 0 when it failed, 1 when it succeeded, 3 when the
// client has no shared control channel. `channel-vandal exit`: exits at once after the
// vandalism instead (status 0), so that its channel breaks as its connections close.
#include <CL/cl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "../first_queue.hpp"
#include "transport/control_channel.hpp"

namespace {

// This process's descriptor of its control channel's memfd, or -1.
int control_channel_fd() {
  const std::string wanted = std::string("/memfd:") + hivecl::transport::ControlChannel::memfd_name;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (!error && target.starts_with(wanted)) return std::stoi(entry.path().filename().string());
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const FirstQueue opened = open_first_queue();
  cl_command_queue queue = opened.queue;
  if (opened.status != CL_SUCCESS || clFinish(queue) != CL_SUCCESS) return 2;
  const int fd = control_channel_fd();
  if (fd < 0) return 3;
  struct stat info {};
  fstat(fd, &info);
  void* memory = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return 2;
  // The client-to-proxy ring's published count comes first: far beyond what the ring holds.
  const uint64_t impossible = UINT64_MAX / 2;
  std::memcpy(memory, &impossible, sizeof impossible);
  if (argc > 1 && std::strcmp(argv[1], "exit") == 0) _exit(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the proxy's reader looks meanwhile
  const cl_int finished = clFinish(queue);
  std::printf("clFinish after the vandalism: %d\n", finished);
  return finished == CL_SUCCESS ? 1 : 0;
}
