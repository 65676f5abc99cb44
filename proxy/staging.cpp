#include "proxy/staging.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include "log.hpp"
#include "proxy/vendors.hpp"

namespace hivecl::proxy {

StagingRing::StagingRing(cl_context context, cl_device_id device, size_t slots, size_t slot_bytes)
    : device_(device), slot_bytes_(slot_bytes), count_(slots) {
  if (!map_runtime_memory(context, device)) {
    log::warn("staging: the runtime gave no mappable host buffer of ", slots * slot_bytes,
              " bytes; using ordinary memory");
    fallback_.reset(new std::byte[slots * slot_bytes]);
    base_ = fallback_.get();
  }
  for (size_t i = slots; i-- > 0;) free_.push_back(i);
  log::debug("staging: ", slots, " slots of ", slot_bytes, " bytes");
}

bool StagingRing::map_runtime_memory(cl_context context, cl_device_id device) {
  if (!context) return false;
  cl_int status = CL_SUCCESS;
  queue_ = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  if (status != CL_SUCCESS) return false;
  buffer_ = clCreateBuffer(context, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, count_ * slot_bytes_, nullptr, &status);
  if (status != CL_SUCCESS) return false;
  void* mapped = clEnqueueMapBuffer(queue_, buffer_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, count_ * slot_bytes_, 0,
                                    nullptr, nullptr, &status);
  if (status != CL_SUCCESS) return false;
  base_ = static_cast<std::byte*>(mapped);
  return true;
}

bool StagingRing::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return freed_.wait_for(lock, timeout, [&] { return free_.size() == count_; });
}

namespace {

// Rings kept for later contexts, by device, and those whose slots never came back. Never
// destroyed, like the contexts their memory belongs to (below).
struct Shelf {
  std::mutex mutex;
  std::vector<std::unique_ptr<StagingRing>> rings;
  std::vector<std::unique_ptr<StagingRing>> never_idle;
};
Shelf& shelf() {
  static auto* instance = new Shelf;
  return *instance;
}

// The proxy's own context on `device`, made at the first ring and kept: a kept ring must not
// hold an application's context after its release (on NVIDIA each context is one on the GPU).
// Never released: PoCL 3.1 must not release a context from an exit handler (docs/FINDINGS.md).
// Null if the runtime refuses it.
cl_context staging_context(cl_device_id device) {
  static std::mutex mutex;
  static auto* contexts = new std::map<cl_device_id, cl_context>;
  std::lock_guard lock(mutex);
  cl_context& context = (*contexts)[device];
  cl_platform_id platform = nullptr;
  if (!context && clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr) == CL_SUCCESS) {
    const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform),
                                                0};
    context = create_native_context(platform, properties, 1, &device, nullptr);
  }
  return context;
}

}  // namespace

std::unique_ptr<StagingRing> take_ring(cl_device_id device, size_t slots, size_t slot_bytes) {
  {
    std::lock_guard lock(shelf().mutex);
    auto& rings = shelf().rings;
    const auto fits = [&](const auto& ring) {
      return ring->device() == device && ring->slots() == slots && ring->slot_bytes() == slot_bytes;
    };
    if (const auto it = std::find_if(rings.begin(), rings.end(), fits); it != rings.end()) {
      auto ring = std::move(*it);
      rings.erase(it);
      return ring;
    }
  }
  return std::make_unique<StagingRing>(staging_context(device), device, slots, slot_bytes);
}

void give_back_ring(std::unique_ptr<StagingRing> ring) {
  if (!ring) return;
  const bool idle = ring->wait_idle(std::chrono::seconds(2));
  if (!idle) log::warn("staging: slots still in use by commands that never completed; keeping their ring");
  {
    std::lock_guard lock(shelf().mutex);
    if (!idle) {
      shelf().never_idle.push_back(std::move(ring));
      return;
    }
    auto& rings = shelf().rings;
    const auto same_device = [&](const auto& kept) { return kept->device() == ring->device(); };
    if (std::count_if(rings.begin(), rings.end(), same_device) < static_cast<std::ptrdiff_t>(shelved_rings_per_device)) {
      rings.push_back(std::move(ring));
      return;
    }
  }
  ring.reset();  // the shelf is full: destroyed outside its lock (it unmaps and finishes its queue)
}

StagingRing::~StagingRing() {
  if (buffer_ && base_ && !fallback_) {
    clEnqueueUnmapMemObject(queue_, buffer_, base_, 0, nullptr, nullptr);
    clFinish(queue_);
  }
  if (buffer_) clReleaseMemObject(buffer_);
  if (queue_) clReleaseCommandQueue(queue_);
}

namespace {

// Far longer than a device takes for a chunk, short enough for a stalled one to go unnoticed.
constexpr auto stall_timeout = std::chrono::milliseconds(100);

}  // namespace

StagingRing::Slot StagingRing::take_free(Filler filler) {
  size_t index = 0;
  if (filler == Filler::device) {
    index = free_.front();
    free_.pop_front();
  } else {
    index = free_.back();
    free_.pop_back();
  }
  return {index, base_ + index * slot_bytes_, nullptr};
}

StagingRing::Slot StagingRing::acquire(Filler filler) {
  std::unique_lock lock(mutex_);
  // Once stalled, until a slot comes back: a write of many chunks behind a user event would
  // otherwise wait the timeout for each of them.
  const bool waits = !stalled_ || !free_.empty();
  if (!waits || !freed_.wait_for(lock, stall_timeout, [&] { return !free_.empty(); })) {
    stalled_ = true;
    if (!std::exchange(warned_, true))
      log::info("staging: the device made no progress for ", stall_timeout.count(),
                " ms with every slot busy (a user event?); chunks use memory of their own meanwhile");
    std::shared_ptr<std::byte[]> own(new std::byte[slot_bytes_]);
    return {count_, own.get(), own};
  }
  return take_free(filler);
}

bool StagingRing::try_acquire(Filler filler, Slot& slot) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) return false;
  slot = take_free(filler);
  return true;
}

void StagingRing::release(const Slot& slot) {
  if (slot.overflow) return;  // freed with the last copy of the slot
  std::lock_guard lock(mutex_);  // notified under the lock: the destructor may run right after
  free_.push_back(slot.index);
  stalled_ = false;
  freed_.notify_all();
}

}  // namespace hivecl::proxy
