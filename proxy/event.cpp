// Event family on the proxy side, and the event plumbing the other executors share.
#include <CL/cl.h>

#include <atomic>
#include <memory>

#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

Enqueue prepare_enqueue(Call& call, ObjectId queue, const EnqueueTail& tail) {
  Enqueue enqueue{call.session.get<cl_command_queue>(queue), call.session.events(tail.wait_list)};
  if (tail.event != no_object) call.session.check_fresh(tail.event);
  return enqueue;
}

void keep_event(Call& call, ObjectId id, cl_event event) {
  if (id != no_object) {
    call.session.add(id, ObjectKind::event, event);
  } else {
    clReleaseEvent(event);
  }
}

namespace {

void CL_CALLBACK run_completion(cl_event event, cl_int status, void* user_data) {
  std::unique_ptr<std::function<void(cl_int)>> action(static_cast<std::function<void(cl_int)>*>(user_data));
  (*action)(status);
  clReleaseEvent(event);
}

}  // namespace

void when_complete(cl_event event, std::function<void(cl_int status)> action) {
  clRetainEvent(event);
  auto* heap_action = new std::function<void(cl_int)>(std::move(action));
  if (clSetEventCallback(event, CL_COMPLETE, run_completion, heap_action) != CL_SUCCESS)
    run_completion(event, CL_INVALID_EVENT, heap_action);
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
void execute(Call& call, const WaitForEvents::Request& request, Replier later) {
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
    when_complete(event, [progress, later](cl_int status) {
      if (status < 0) progress->failed = true;
      if (progress->remaining.fetch_sub(1) == 1)
        later.reply<WaitForEvents>(progress->failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS);
    });
  }
}

}  // namespace hivecl::proxy
