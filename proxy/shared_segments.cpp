#include "proxy/shared_segments.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "cl_error.hpp"
#include "log.hpp"
#include "proxy/completion.hpp"

namespace hivecl::proxy {

namespace {

// Far more than a program maps at once (each is one descriptor in the client and here).
constexpr size_t max_segments_per_session = 4096;

}  // namespace

AttachedSegment::~AttachedSegment() {
  for (cl_command_queue queue : queues_) clReleaseCommandQueue(queue);
  for (auto& wrapped : page_locked_)
    if (wrapped.second) clReleaseMemObject(wrapped.second);
}

void AttachedSegment::used_by(cl_command_queue queue) {
  std::lock_guard lock(mutex_);
  if (std::find(queues_.begin(), queues_.end(), queue) != queues_.end()) return;
  clRetainCommandQueue(queue);
  queues_.push_back(queue);
}

std::vector<cl_command_queue> AttachedSegment::take_queues() {
  std::lock_guard lock(mutex_);
  return std::exchange(queues_, {});
}

std::byte* AttachedSegment::memory(cl_context context, uint64_t offset, uint64_t size) {
  if (offset > segment_->size() || size > segment_->size() - offset) throw ClError{CL_INVALID_VALUE};
  std::lock_guard lock(mutex_);
  if (!page_locked_.contains(context)) {
    cl_int status = CL_SUCCESS;
    const cl_mem wrapper = clCreateBuffer(context, CL_MEM_USE_HOST_PTR, segment_->size(), segment_->data(), &status);
    if (status != CL_SUCCESS) log::debug("a shared segment could not be wrapped (", status, "): not page-locked");
    page_locked_[context] = status == CL_SUCCESS ? wrapper : nullptr;
  }
  return segment_->data() + offset;
}

std::shared_ptr<AttachedSegment> SharedSegments::get(pid_t owner, const protocol::SharedRange& range) {
  std::lock_guard lock(mutex_);
  if (const auto found = attached_.find(range.segment); found != attached_.end()) return found->second;
  if (attached_.size() >= max_segments_per_session) throw ClError{CL_OUT_OF_RESOURCES};
  auto segment = transport::SharedSegment::attach(owner, range.fd, range.inode, range.segment_size);
  if (!segment) {
    log::warn("could not map a shared segment of client ", owner, ": ", std::strerror(errno));
    throw ClError{CL_INVALID_VALUE};
  }
  log::debug("mapped a shared segment of ", range.segment_size, " bytes of client ", owner);
  auto attached = std::make_shared<AttachedSegment>(std::move(segment));
  attached_.emplace(range.segment, attached);
  return attached;
}

// The commands of the queues noted keep the segment mapped until they end: a marker after them
// (a marker with no wait list waits for every earlier command, out of order too).
void SharedSegments::forget(uint64_t segment) {
  std::shared_ptr<AttachedSegment> forgotten;
  {
    std::lock_guard lock(mutex_);
    const auto found = attached_.find(segment);
    if (found == attached_.end()) return;
    forgotten = std::move(found->second);
    attached_.erase(found);
  }
  for (cl_command_queue queue : forgotten->take_queues()) {
    cl_event marker = nullptr;
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) == CL_SUCCESS) {
      clFlush(queue);
      when_complete(marker, [forgotten](cl_int) {});
      clReleaseEvent(marker);
    }
    clReleaseCommandQueue(queue);
  }
}

}  // namespace hivecl::proxy
