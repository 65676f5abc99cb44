// Host memory that a client and a proxy on its node both map: a memfd that the client
// creates and the proxy opens through /proc/<client>/fd (the same permission as
// process_vm_readv). The proxy wraps its mapping in a CL_MEM_USE_HOST_PTR buffer, which
// makes NVIDIA's runtime page-lock it: transfers between it and the device then run at
// page-locked speed with no copy on either side (docs/FINDINGS.md). HiveCL backs the host
// memory of mapped buffers with such segments, so a program that transfers from mapped
// CL_MEM_ALLOC_HOST_PTR memory gets page-locked transfers as it does natively.
// The client seals the file's size (F_SEAL_SHRINK, F_SEAL_GROW) and the proxy maps only a
// sealed one: a client that shrank its file under the proxy's mapping would kill the proxy
// with SIGBUS at its next access.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hivecl::transport {

class SharedSegment {
 public:
  // Client: a new segment of `size` bytes; nullptr if the system offers none. `name` shows in
  // /proc/<pid>/fd as "memfd:<name>". Mapped at `at` (page-aligned) where given, or nowhere if
  // anything is mapped there already.
  static std::unique_ptr<SharedSegment> create(size_t size, const char* name = "hivecl-host-memory",
                                               void* at = nullptr);
  // Proxy: the client `owner`'s segment open as its descriptor `fd`, if it is the file
  // with that inode, at least `size` bytes and sealed against shrinking; nullptr otherwise
  // (errno says why).
  static std::unique_ptr<SharedSegment> attach(pid_t owner, int fd, uint64_t inode, size_t size);
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  uint64_t inode() const { return inode_; }

 private:
  SharedSegment(int fd, std::byte* data, size_t size, uint64_t inode)
      : fd_(fd), data_(data), size_(size), inode_(inode) {}
  static std::unique_ptr<SharedSegment> map(int fd, size_t size, void* at = nullptr);

  int fd_;
  std::byte* data_;
  size_t size_;
  uint64_t inode_;
};

}  // namespace hivecl::transport
