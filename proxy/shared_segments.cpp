#include "proxy/shared_segments.hpp"

#include <cerrno>
#include <cstring>

#include "cl_error.hpp"
#include "log.hpp"
#include "proxy/completion.hpp"

namespace hivecl::proxy {

namespace {

// Far more than a program maps at once (each is one descriptor in the client and here).
constexpr size_t max_segments_per_session = 4096;

bool ended(cl_event event) {
  cl_int status = CL_QUEUED;
  return clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS ||
         status <= CL_COMPLETE;
}

}  // namespace

AttachedSegment::~AttachedSegment() {
  for (cl_event event : running_) clReleaseEvent(event);
  for (auto& wrapped : page_locked_)
    if (wrapped.second) clReleaseMemObject(wrapped.second);
}

void AttachedSegment::hold_while_running(cl_event event) {
  clRetainEvent(event);
  std::lock_guard lock(mutex_);
  // Commands of one queue end in order: the oldest tells when to look further.
  while (!running_.empty() && ended(running_.front())) {
    clReleaseEvent(running_.front());
    running_.pop_front();
  }
  running_.push_back(event);
}

std::vector<cl_event> AttachedSegment::take_running() {
  std::lock_guard lock(mutex_);
  std::vector<cl_event> running(running_.begin(), running_.end());
  running_.clear();
  return running;
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

// The commands that still hold the segment keep it mapped until they end.
void SharedSegments::forget(uint64_t segment) {
  std::shared_ptr<AttachedSegment> forgotten;
  {
    std::lock_guard lock(mutex_);
    const auto found = attached_.find(segment);
    if (found == attached_.end()) return;
    forgotten = std::move(found->second);
    attached_.erase(found);
  }
  for (cl_event event : forgotten->take_running()) {
    if (!ended(event)) when_complete(event, [forgotten](cl_int) {});
    clReleaseEvent(event);
  }
}

}  // namespace hivecl::proxy
