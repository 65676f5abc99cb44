// The proxy's staging ring: for each native context, K slots of B bytes of host memory that
// the native runtime allocated itself (a CL_MEM_ALLOC_HOST_PTR buffer mapped once,
// which NVIDIA's driver page-locks), so the device moves them at page-locked speed.
// A transfer takes a slot per chunk: chunk i+1 arrives in one slot while chunk i goes
// to the device from another; taking a slot waits while all are busy (back-pressure),
// so a transfer of any size uses at most K*B bytes while the device makes progress.
// A device that makes none for a while (commands waiting for a user event that only a later
// request of the same session will set) gets chunks in memory of their own instead, so the
// session never waits for itself.
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

namespace hivecl::proxy {

class StagingRing;

// A ring for a context's transfers, first made for `device`: one kept from a released context
// of the same device and sizes if there is one, else a new one. Rings are made with a context
// of the proxy's own per device (made at the first), so that they outlive the application's.
std::unique_ptr<StagingRing> take_ring(cl_device_id device, size_t slots, size_t slot_bytes);
// Gives back the ring of a released context once its slots are back: kept for the next context
// of its device (making one cost 7-10 ms on the H100, a 16 MiB page-locked buffer, and a ring of
// another context moves data as fast), up to `shelved_rings_per_device`, else destroyed. Some
// runtimes (PoCL 3.1) never call back for a command whose wait list failed: such a ring's slots
// never return, and it is kept (never freed) rather than have a late callback touch freed memory.
void give_back_ring(std::unique_ptr<StagingRing> ring);
inline constexpr size_t shelved_rings_per_device = 1;

class StagingRing {
 public:
  struct Slot {
    size_t index;
    std::byte* data;
    std::shared_ptr<std::byte[]> overflow;  // set for memory of its own, outside the ring
  };

  // Falls back to ordinary memory (and says so) where the runtime cannot map such a buffer, or
  // `context` is null.
  StagingRing(cl_context context, cl_device_id device, size_t slots, size_t slot_bytes);
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing();
  // Waits at most `timeout` for every slot to come back; false if some did not.
  bool wait_idle(std::chrono::milliseconds timeout);

  size_t slot_bytes() const { return slot_bytes_; }
  size_t slots() const { return count_; }
  cl_device_id device() const { return device_; }
  // Who fills a slot first: the device (a read) or the host (a write). The device gets the
  // free slot released longest ago, the host the one released last: on the H100 machine
  // NVIDIA's DMA into a slot that the copy threads had just read out took 1.4-8 times as long
  // (their caches held its lines), and a copy into a slot whose lines are still cached is the
  // faster one (docs/FINDINGS.md).
  enum class Filler { device, host };
  // Waits for a free slot; memory of its own after `stall_timeout` without one.
  Slot acquire(Filler filler);
  // A free slot if there is one.
  bool try_acquire(Filler filler, Slot& slot);
  void release(const Slot& slot);

 private:
  bool map_runtime_memory(cl_context context, cl_device_id device);
  // Takes a slot off the free list (not empty; mutex_ held) for `filler`.
  Slot take_free(Filler filler);

  cl_device_id device_;
  size_t slot_bytes_;
  std::byte* base_ = nullptr;
  std::unique_ptr<std::byte[]> fallback_;
  cl_mem buffer_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::deque<size_t> free_;  // the most recently released last
  size_t count_;
  bool stalled_ = false;  // an acquire found no slot within the stall timeout, and none came back since
  bool warned_ = false;
};

}  // namespace hivecl::proxy
