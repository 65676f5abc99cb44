// Writing a whole span to a file descriptor: what kernels printed, on the proxy's side and on the
// application's (proxy/output_capture.hpp, icd/connection.cpp).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <span>

namespace hivecl {

// Writes `bytes` to `fd`, piece by piece as the descriptor takes them; stops early where it takes
// none (closed, or not writable), and the rest is lost, as for a process's own output.
inline void write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    bytes = bytes.subspan(static_cast<size_t>(written));
  }
}

}  // namespace hivecl
