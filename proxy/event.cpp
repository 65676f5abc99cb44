// Event family on the proxy side, and the event plumbing the other executors share.
#include <CL/cl.h>

#include <atomic>
#include <memory>

#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

Enqueue prepare_enqueue(Call& call, ObjectId queue, const EnqueueTail& tail) {
  const cl_command_queue native = call.session.get<cl_command_queue>(queue);
  Enqueue enqueue{native, call.session.events(tail.wait_list), call.session.facts_of(native)};
  if (tail.event != no_object) call.session.check_fresh(tail.event);
  if (!enqueue.waits.empty()) note_wait_list(enqueue.queue, enqueue.waits, call.session.user_events());
  return enqueue;
}

void keep_event(Call& call, ObjectId id, cl_event event) {
  if (id != no_object) {
    call.session.add(id, ObjectKind::event, event);
  } else if (event) {
    clReleaseEvent(event);
  }
}

void keep_failed_event(Call& call, ObjectId queue, ObjectId id, cl_int status) {
  if (id == no_object) return;
  try {
    call.session.check_fresh(id);
    cl_context context = nullptr;
    check(clGetCommandQueueInfo(call.session.get<cl_command_queue>(queue), CL_QUEUE_CONTEXT, sizeof context, &context,
                                nullptr));
    cl_int created = CL_SUCCESS;
    const cl_event event = clCreateUserEvent(context, &created);
    check(created);
    clSetUserEventStatus(event, status < 0 ? status : CL_OUT_OF_RESOURCES);
    try {
      call.session.add(id, ObjectKind::event, event);
    } catch (const ClError&) {
      clReleaseEvent(event);
      throw;
    }
  } catch (const ClError&) {
    // The id or queue was bad to begin with: the client's later uses of it are refused.
  }
}

EnqueueMarker::Reply execute(Call& call, const EnqueueMarker::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  cl_event event = nullptr;
  const auto native = request.barrier ? clEnqueueBarrierWithWaitList : clEnqueueMarkerWithWaitList;
  check(native(enqueue.queue, enqueue.wait_count(), enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

// Answered when every event has completed; their queues are flushed first, as
// clWaitForEvents does, so that the commands are sure to run.
void execute(Call& call, const WaitForEvents::Request& request, const Replier& later) {
  const auto events = call.session.events(request.events, CL_INVALID_EVENT);
  if (events.empty()) throw ClError{CL_INVALID_VALUE};
  for (cl_event event : events) {
    cl_command_queue queue = nullptr;
    if (clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof queue, &queue, nullptr) == CL_SUCCESS && queue)
      clFlush(queue);
  }
  struct Progress {
    std::atomic<size_t> remaining;
    std::atomic<bool> failed{false};
  };
  auto progress = std::make_shared<Progress>();
  progress->remaining = events.size();
  for (cl_event event : events) {
    when_complete(call, event, [progress, later](cl_int status) {
      if (status < 0) progress->failed = true;
      if (progress->remaining.fetch_sub(1) == 1)
        later.reply<WaitForEvents>(progress->failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS);
    });
  }
}

CreateUserEvent::Reply execute(Call& call, const CreateUserEvent::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  cl_int status = CL_SUCCESS;
  const cl_event event = clCreateUserEvent(session.get<cl_context>(request.context), &status);
  check(status);
  session.add(request.id, ObjectKind::event, event);
  session.hold_user_event(event);
  return {};
}

namespace {

bool is_user_event(cl_event event) {
  cl_command_type type = 0;
  return clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS &&
         type == CL_COMMAND_USER;
}

}  // namespace

// Checked here as well as on the client: native runtimes must never see a status they may
// take for a valid one, nor a user-event call on another event.
SetUserEventStatus::Reply execute(Call& call, const SetUserEventStatus::Request& request) {
  const cl_event event = call.session.get<cl_event>(request.event);
  if (!is_user_event(event)) throw ClError{CL_INVALID_EVENT};
  if (request.execution_status > 0) throw ClError{CL_INVALID_VALUE};
  check(clSetUserEventStatus(event, request.execution_status));
  return {};
}

void execute(Call& call, const WatchEvent::Request& request, const Replier& later) {
  const cl_event event = call.session.get<cl_event>(request.event);
  if (request.status != CL_SUBMITTED && request.status != CL_RUNNING && request.status != CL_COMPLETE)
    throw ClError{CL_INVALID_VALUE};
  when_status(event, request.status, [later](cl_int status) {
    later.reply<WatchEvent>(CL_SUCCESS, {.execution_status = status});
  });
}

}  // namespace hivecl::proxy
