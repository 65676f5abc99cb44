// What one client session holds on the proxy, counted against the per-session caps
// (config session_max_objects and session_max_memory_bytes; 0 means no cap). This is the
// one place where a session's resources are counted: per-session statistics belong here.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <cstdint>

#include "cl_error.hpp"

namespace hivecl::proxy {

// Adds `amount` (modulo 2^64) to a counter that one request at a time changes (the session's
// worker, or in-process the holder of the session's lock) and other threads only read (logs,
// status): a relaxed load and store, without the locked instruction of an atomic addition.
inline void add_as_sole_writer(std::atomic<uint64_t>& counter, uint64_t amount) {
  counter.store(counter.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

class SessionUsage {
 public:
  SessionUsage(uint64_t max_objects, uint64_t max_memory_bytes)
      : max_objects_(max_objects), max_memory_bytes_(max_memory_bytes) {}

  // Throws the spec's error when one more object holding `memory_bytes` of device memory
  // would exceed a cap: CL_OUT_OF_RESOURCES for objects, CL_MEM_OBJECT_ALLOCATION_FAILURE for memory.
  void check_room(uint64_t memory_bytes) const {
    if (max_objects_ != 0 && objects_ >= max_objects_) throw ClError{CL_OUT_OF_RESOURCES};
    if (max_memory_bytes_ != 0 && memory_bytes > max_memory_bytes_ - std::min(memory_bytes_.load(), max_memory_bytes_))
      throw ClError{CL_MEM_OBJECT_ALLOCATION_FAILURE};
  }
  void add(uint64_t memory_bytes) {
    add_as_sole_writer(objects_, 1);
    add_as_sole_writer(memory_bytes_, memory_bytes);
  }
  void remove(uint64_t memory_bytes) {
    add_as_sole_writer(objects_, uint64_t{0} - 1);
    add_as_sole_writer(memory_bytes_, uint64_t{0} - memory_bytes);
  }
  uint64_t objects() const { return objects_; }
  uint64_t memory_bytes() const { return memory_bytes_; }

 private:
  const uint64_t max_objects_;
  const uint64_t max_memory_bytes_;
  std::atomic<uint64_t> objects_{0};  // add_as_sole_writer
  std::atomic<uint64_t> memory_bytes_{0};
};

}  // namespace hivecl::proxy
