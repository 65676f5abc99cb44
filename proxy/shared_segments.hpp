// The client's shared segments (transport/shared_segment.hpp) that a session has mapped.
// Each is wrapped in a CL_MEM_USE_HOST_PTR buffer per native context, which makes the
// runtime page-lock it; transfers then use its memory directly.
#pragma once

#include <CL/cl.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "protocol/messages.hpp"
#include "transport/shared_segment.hpp"

namespace hivecl::proxy {

class AttachedSegment {
 public:
  explicit AttachedSegment(std::unique_ptr<transport::SharedSegment> segment) : segment_(std::move(segment)) {}
  AttachedSegment(const AttachedSegment&) = delete;
  AttachedSegment& operator=(const AttachedSegment&) = delete;
  ~AttachedSegment();
  // The segment's bytes from `offset` for a transfer of `size` bytes in `context`;
  // ClError(CL_INVALID_VALUE) if they are not all inside it.
  std::byte* memory(cl_context context, uint64_t offset, uint64_t size);
  // Notes that commands of `queue` use the segment and no completion thread follows them
  // (in-process non-blocking transfers: a hand-over per command cost a window of 64 KiB
  // transfers a third of its speed on NVIDIA). The queue is retained until the segment is
  // forgotten, when a marker on it tells when those commands have ended.
  void used_by(cl_command_queue queue);
  // The queues noted (retained; the caller releases them).
  std::vector<cl_command_queue> take_queues();

 private:
  std::unique_ptr<transport::SharedSegment> segment_;
  std::mutex mutex_;
  std::map<cl_context, cl_mem> page_locked_;  // the wrapping buffers
  std::vector<cl_command_queue> queues_;
};

class SharedSegments {
 public:
  // The segment of `range`, mapped from client `owner` at its first use; ClError(CL_INVALID_VALUE)
  // if it cannot be, CL_OUT_OF_RESOURCES beyond the session's number of segments.
  std::shared_ptr<AttachedSegment> get(pid_t owner, const protocol::SharedRange& range);
  // Unmapped once the transfers that use it are done.
  void forget(uint64_t segment);

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<AttachedSegment>> attached_;
};

}  // namespace hivecl::proxy
