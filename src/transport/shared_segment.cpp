#include "transport/shared_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace hivecl::transport {

std::unique_ptr<SharedSegment> SharedSegment::map(int fd, size_t size, void* at) {
  struct stat info {};
  void* data = MAP_FAILED;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) >= size && size > 0)
    data = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED_NOREPLACE : 0), fd, 0);
  if (at && data != at && data != MAP_FAILED) {  // a kernel without MAP_FIXED_NOREPLACE took it as a hint
    munmap(data, size);
    data = MAP_FAILED;
  }
  if (data == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<SharedSegment>(
      new SharedSegment(fd, static_cast<std::byte*>(data), size, static_cast<uint64_t>(info.st_ino)));
}

std::unique_ptr<SharedSegment> SharedSegment::create(size_t size, const char* name, void* at) {
  const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return nullptr;
  }
  return map(fd, size, at);
}

std::unique_ptr<SharedSegment> SharedSegment::attach(pid_t owner, int fd, uint64_t inode, size_t size) {
  const std::string path = "/proc/" + std::to_string(owner) + "/fd/" + std::to_string(fd);
  const int own_fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own_fd < 0) return nullptr;
  const int seals = fcntl(own_fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) {  // its owner could shrink it under our mapping
    close(own_fd);
    errno = EPERM;
    return nullptr;
  }
  auto segment = map(own_fd, size);
  if (segment && segment->inode() != inode) return nullptr;  // not the file the client meant
  return segment;
}

SharedSegment::~SharedSegment() {
  munmap(data_, size_);
  close(fd_);
}

}  // namespace hivecl::transport
