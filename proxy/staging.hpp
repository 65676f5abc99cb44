// The proxy's staging ring: per native context, K slots of B bytes of host memory that
// the native runtime allocated itself (a CL_MEM_ALLOC_HOST_PTR buffer mapped once,
// which NVIDIA's driver page-locks), so the device moves them at page-locked speed.
// A transfer takes a slot per chunk: chunk i+1 arrives in one slot while chunk i goes
// to the device from another; taking a slot waits while all are busy (back-pressure),
// so a transfer of any size uses at most K*B bytes.
#pragma once

#include <CL/cl.h>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace hivecl::proxy {

class StagingRing {
 public:
  struct Slot {
    size_t index;
    std::byte* data;
  };

  // Falls back to ordinary memory (and says so) where the runtime cannot map such a buffer.
  StagingRing(cl_context context, cl_device_id device, size_t slots, size_t slot_bytes);
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  // Waits until every slot is back.
  ~StagingRing();

  size_t slot_bytes() const { return slot_bytes_; }
  // Waits for a free slot.
  Slot acquire();
  // A free slot if there is one.
  bool try_acquire(Slot& slot);
  void release(const Slot& slot);

 private:
  bool map_runtime_memory(cl_context context, cl_device_id device);

  size_t slot_bytes_;
  std::byte* base_ = nullptr;
  std::unique_ptr<std::byte[]> fallback_;
  cl_mem buffer_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;
  size_t count_;
};

}  // namespace hivecl::proxy
