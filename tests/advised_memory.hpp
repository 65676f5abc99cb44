// Anonymous memory at a 2 MiB boundary, given madvise advice (MADV_HUGEPAGE, MADV_NOHUGEPAGE,
// MADV_NORMAL) before it is written, so that its pages are present and of the advised kind: the
// host memory of bench-bus-speed and of the page-map unit tests.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

class AdvisedMemory {
 public:
  static constexpr size_t huge_page = size_t{2} << 20;

  AdvisedMemory(size_t bytes, int advice) : mapped_(bytes + huge_page) {
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    start_ = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(base_) + huge_page - 1) & ~(huge_page - 1));
    advised_ = madvise(start_, bytes, advice) == 0;
    std::memset(start_, 1, bytes);
  }
  AdvisedMemory(const AdvisedMemory&) = delete;
  AdvisedMemory& operator=(const AdvisedMemory&) = delete;
  ~AdvisedMemory() { munmap(base_, mapped_); }

  std::byte* data() const { return start_; }
  uint64_t address() const { return reinterpret_cast<uint64_t>(start_); }
  bool advised() const { return advised_; }  // the kernel took the advice

 private:
  size_t mapped_;
  void* base_;
  std::byte* start_;
  bool advised_ = false;
};
