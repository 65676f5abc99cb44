// Transfers in which the native runtime moves the application's memory itself, as natively:
// in-process (transport/in_process.hpp) always, through a proxy of this node from a shared
// segment. A transfer is given bound to its memory object, host memory and range, as a
// callable `cl_int(cl_command_queue, cl_bool blocking, cl_uint wait_count,
// const cl_event* wait_list, cl_event* event)`; the buffer, rectangle and image families each
// bind their own native call.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "proxy/executors.hpp"
#include "proxy/shared_segments.hpp"

namespace hivecl::proxy {

// A blocking transfer in-process from the application's ordinary memory: the application's
// thread makes the native blocking call itself once the session's lock is free (NVIDIA serves
// a small blocking read several times faster than a non-blocking one and a wait; from a shared
// segment's page-locked mapping the blocking call was the slower: docs/FINDINGS.md), then
// registers its event under the lock, if it has one; a failure of the call is the transfer's
// status. The queue and the memory object are the application's during its call and are not
// retained for it (as for clFinish in queue.cpp: a queue's retain and release cost 1.2 µs on
// NVIDIA, a buffer's 60 ns; releasing one meanwhile is the application's error, as natively).
template <class Native>
void block_in_caller(Call& call, Native native, const Enqueue& enqueue, protocol::ObjectId queue_id,
                     protocol::ObjectId event_id, const Replier& status_to) {
  for (cl_event wait : enqueue.waits) clRetainEvent(wait);
  call.caller_waits->push_back([&session = call.session, sequence = call.sequence, native, enqueue, queue_id,
                                event_id, status_to](std::mutex& session_lock) {
    cl_event event = nullptr;
    const cl_int status =
        native(enqueue.queue, CL_TRUE, enqueue.wait_count(), enqueue.wait_list(), event_wanted(event_id, event));
    if (event_id != protocol::no_object) {
      std::lock_guard lock(session_lock);
      Call later_call{.session = session, .sequence = sequence};
      if (status == CL_SUCCESS) {
        keep_event(later_call, event_id, event);
      } else {
        keep_failed_event(later_call, queue_id, event_id, status);
      }
    }
    for (cl_event wait : enqueue.waits) clReleaseEvent(wait);
    status_to.send_status(status);
  });
}

// A non-blocking transfer that reports nothing itself, as natively: no status, and no native event
// unless the application asked for one (handing each command to the queue's waiter thread only
// to report an end nobody waits for cost an in-process window of 64 KiB transfers a third of
// its speed). Nor does it flush: the application's own flush or wait does (a flush each cost
// such a window a fifth of its speed on NVIDIA). Memory in a shared segment is kept mapped until
// the device is through with it (AttachedSegment::used_by). Returns the native event kept for
// the application, if it asked for one.
template <class Native>
cl_event transfer_unwatched(Call& call, Native native, const Enqueue& enqueue, protocol::ObjectId event_id,
                            AttachedSegment* segment) {
  if (segment) segment->used_by(enqueue.queue);
  cl_event event = nullptr;
  check(native(enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), event_wanted(event_id, event)));
  keep_event(call, event_id, event);
  return event;
}

// In-process, the reply of a transfer in place once it is enqueued: none for one answered only
// if it fails (protocol::answered_only_on_failure: a detached write, a non-blocking rectangle or
// image transfer).
template <class M>
void confirm_in_place(const typename M::Request& request, const Replier& later) {
  if (!protocol::answered_only_on_failure<M>(request, true)) later.reply<M>(CL_SUCCESS);
}

// In-process the native runtime moves the application's memory itself, without staging; the
// status after the command's end (on the request's data tag) tells a blocking transfer when to
// return, and a non-blocking one reports nothing (transfer_unwatched). `segment`: the shared
// segment whose page-locked mapping the transfer uses, if any.
template <class Native>
void transfer_in_place(Call& call, Native native, const Enqueue& enqueue, protocol::ObjectId queue_id,
                       protocol::ObjectId event_id, bool blocking, std::shared_ptr<AttachedSegment> segment,
                       const Replier& status_to) {
  if (!blocking) {
    transfer_unwatched(call, native, enqueue, event_id, segment.get());
    return;
  }
  if (call.caller_waits && !segment) return block_in_caller(call, native, enqueue, queue_id, event_id, status_to);
  cl_event event = nullptr;
  check(native(enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  // The caller's own wait flushes (clWaitForEvents); a completion thread's does not. An
  // explicit flush cost 1.2 µs on NVIDIA.
  if (!call.caller_waits) clFlush(enqueue.queue);
  when_complete(call, event, [status_to, segment](cl_int status) { status_to.send_status(status); });
  keep_event(call, event_id, event);
}

// In-process a mapping is the native runtime's own, as natively (MapBuffer, MapImage), bound as
// `Reply(cl_command_queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list,
// cl_event* event, cl_int* status)`. A blocking map is the native blocking call, made by the
// application's thread once the session's lock is free, as block_in_caller's transfers: its
// reply, then its status. A failed map registers no event: the client publishes none.
template <class M, class Native>
void map_natively(Call& call, Native native, const Enqueue& enqueue, protocol::ObjectId event_id, bool blocking,
                  const Replier& later) {
  if (!in_process(call.session)) throw ClError{CL_INVALID_VALUE};
  if (!blocking) {
    cl_event event = nullptr;
    cl_int status = CL_SUCCESS;
    const typename M::Reply reply = native(enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(),
                                           event_wanted(event_id, event), &status);
    check(status);
    keep_event(call, event_id, event);
    later.reply<M>(CL_SUCCESS, reply);
    return;
  }
  for (cl_event wait : enqueue.waits) clRetainEvent(wait);
  call.caller_waits->push_back([&session = call.session, sequence = call.sequence, native, enqueue, event_id,
                                later](std::mutex& session_lock) {
    cl_event event = nullptr;
    cl_int status = CL_SUCCESS;
    const typename M::Reply reply = native(enqueue.queue, CL_TRUE, enqueue.wait_count(), enqueue.wait_list(),
                                           event_wanted(event_id, event), &status);
    if (status == CL_SUCCESS && event_id != protocol::no_object) {
      std::lock_guard lock(session_lock);
      Call later_call{.session = session, .sequence = sequence};
      keep_event(later_call, event_id, event);
    }
    for (cl_event wait : enqueue.waits) clReleaseEvent(wait);
    later.reply<M>(status, reply);
    if (status == CL_SUCCESS) later.send_status(CL_SUCCESS);
  });
}

// The bytes of a shared segment for a transfer on `enqueue`'s queue, through this process's
// mapping of it, which a wrapping buffer made page-locked; the segment stays mapped while held.
// CL_INVALID_VALUE unless `size` bytes from the range's offset lie inside it.
std::pair<std::shared_ptr<AttachedSegment>, std::byte*> segment_memory(Call& call, const Enqueue& enqueue,
                                                                       const protocol::SharedRange& range,
                                                                       uint64_t size);

// Through a proxy of this node, host memory in a shared segment (segment_memory): one native
// command straight to or from its page-locked mapping, answered (`done`) when the device is
// through with the memory, which stays mapped until then.
template <class Native>
cl_event transfer_with_segment(Native native, const Enqueue& enqueue, std::shared_ptr<AttachedSegment> segment,
                               std::function<void(cl_int)> done) {
  cl_event event = nullptr;
  check(native(enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  when_enqueued_complete(enqueue.queue, enqueue.facts.in_order, event,
                         [segment = std::move(segment), done = std::move(done)](cl_int status) {
                           done(status < 0 ? status : CL_SUCCESS);
                         });
  return event;
}

// The bytes of host memory that `slices` of `rows` rows of `row` bytes span with the pitches
// given (0: packed); CL_INVALID_VALUE for a pitch shorter than what it steps over, or a span
// beyond 64 bits. What the native runtime may touch of memory the proxy maps (a shared segment).
uint64_t pitched_span(uint64_t row, uint64_t rows, uint64_t slices, uint64_t row_pitch, uint64_t slice_pitch);

// CL_INVALID_VALUE for host memory in place over MPI (where host data travels packed) or not
// named (by its address, or as a shared segment's), for `blocking` off the in-process path, or
// for pitches or blocking given without it.
void check_in_place(Session& session, const protocol::InPlace& in_place, bool host_named);

// The host memory of a rectangle or image transfer: named by its address or as a shared
// segment's (not both), its pitches as check_in_place allows them.
template <class Request>
void check_host_memory(Session& session, const Request& request) {
  if (request.host_address && request.shared.segment) throw ClError{CL_INVALID_VALUE};
  check_in_place(session, request.in_place, request.host_address || request.shared.segment);
}

}  // namespace hivecl::proxy
