// Command-queue family on the proxy side.
#include <CL/cl.h>

#include "proxy/executors.hpp"
#include "proxy/server.hpp"

namespace hivecl::proxy {

using namespace protocol;

CreateCommandQueue::Reply execute(Call& call, const CreateCommandQueue::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const cl_device_id device = session.device(request.device);
  if (!request.properties.empty() && request.properties.back() != 0) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_queue_properties> properties(request.properties.begin(), request.properties.end());
  // The client refuses on-device queues (HiveCL offers none); one that asks anyway must not
  // reach the native runtime, which may abort the proxy (PoCL 3.1 does).
  for (size_t i = 0; i + 1 < properties.size(); i += 2)
    if (properties[i] == CL_QUEUE_PROPERTIES && (properties[i + 1] & (CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT)))
      throw ClError{CL_INVALID_QUEUE_PROPERTIES};
  cl_int status = CL_SUCCESS;
  const cl_command_queue queue = clCreateCommandQueueWithProperties(
      context, device, properties.empty() ? nullptr : properties.data(), &status);
  check(status);
  session.add(request.id, ObjectKind::command_queue, queue);
  session.note_queue(queue, {.context = context, .device = device, .in_order = is_in_order(queue)});
  return {};
}

Flush::Reply execute(Call& call, const Flush::Request& request) {
  check(clFlush(call.session.get<cl_command_queue>(request.queue)));
  return {};
}

// A native clFinish, made where it holds up none of this session's other requests: over MPI
// by the thread that waits for the queue's commands, after the completions it already
// waits for (a read's data reaches the client before the reply); in-process by the
// application's thread. (A marker and a wait for it took 15 µs more on NVIDIA: the
// marker's trip through the runtime's scheduler.) In-process the queue is not retained for
// that: the application holds it during its clFinish (releasing it meanwhile is an error of
// the application's, as natively), and a retain and release cost as much as the clFinish
// itself on NVIDIA (1.2 µs).
void execute(Call& call, const Finish::Request& request, const Replier& later) {
  const cl_command_queue queue = call.session.get<cl_command_queue>(request.queue);
  if (call.caller_waits) {
    call.caller_waits->push_back([queue, later](std::mutex&) { later.reply<Finish>(clFinish(queue)); });
    return;
  }
  when_finished(queue, [later](cl_int status) { later.reply<Finish>(status); });
}

}  // namespace hivecl::proxy
