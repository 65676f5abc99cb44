// Event family on the client side, and what every enqueue shares: wait lists, the
// command's event, markers and barriers.
#include <CL/cl.h>

#include <algorithm>
#include <optional>

#include "icd/api.hpp"
#include "icd/callbacks.hpp"
#include "icd/spanning.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace hivecl::icd {

namespace {

// Between two proxies, proxy to proxy: the relay's proxy makes it, expecting the event's status
// under a ticket, and the event's proxy claims the ticket and sends the status when the event
// has ended. Nothing passes through this process.
std::shared_ptr<OwnEvent> signal_between_proxies(_cl_event* event, const _cl_context* context, Connection* connection) {
  const Bytes ticket = new_peer_ticket();
  const ObjectId id = connection->new_id();
  connection->call<ExpectPeerEvent>({.ticket = ticket, .context = context->id_on(connection), .event = id});
  auto relay = std::make_shared<OwnEvent>(connection, id);
  try {
    event->connection->call<SignalPeer>({.ticket = ticket, .event = event->id,
                                         .peer_node = connection->record().node,
                                         .peer_pid = connection->record().pid});
  } catch (const ClError& error) {
    connection->post<CancelPeerTicket>({.ticket = ticket, .status = error.code});
    throw;
  }
  return relay;
}

// A user event on `connection` that completes (or fails) when `event`, a command of another
// part, does: set proxy to proxy where both are proxies; otherwise by this process, from a
// watch whose answer is handed to HiveCL's callback thread (which lets the relay go: never the
// thread that answers the watch).
std::shared_ptr<OwnEvent> relay_of(_cl_event* event, const _cl_context* context, Connection* connection) {
  if (!connection->in_process() && !event->connection->in_process())
    return signal_between_proxies(event, context, connection);
  const ObjectId id = connection->new_id();
  connection->call<CreateUserEvent>({.id = id, .context = context->id_on(connection)});
  auto relay = std::make_shared<OwnEvent>(connection, id);
  event->connection->call_later<WatchEvent>(
      {.event = event->id, .status = CL_COMPLETE},
      [relay](cl_int status, const WatchEvent::Reply& reply) mutable {
        const cl_int reached = watched_status(status, reply);
        TaskThread::callbacks().post([relay = std::move(relay), reached] {
          try {
            relay->connection->call<SetUserEventStatus>(
                {.event = relay->id, .execution_status = std::min(reached, CL_COMPLETE)});
          } catch (const ClError&) {  // the waiting command's proxy is gone: its commands fail anyway
          }
        });
      });
  return relay;
}

}  // namespace

OwnEvent::~OwnEvent() { release_remote(connection, ObjectKind::event, id); }

std::vector<ObjectId> wait_list_ids(const _cl_context* context, cl_uint count, const cl_event* events,
                                    Connection* connection, std::vector<std::shared_ptr<OwnEvent>>& relays) {
  if ((count == 0) != (events == nullptr)) throw ClError{CL_INVALID_EVENT_WAIT_LIST};
  std::vector<ObjectId> ids;
  for (cl_uint i = 0; i < count; ++i) {
    if (!events[i] || !is_live(events[i], HandleKind::event)) throw ClError{CL_INVALID_EVENT_WAIT_LIST};
    if (events[i]->context.get() != context) throw ClError{CL_INVALID_CONTEXT};
  }
  for (cl_uint i = 0; i < count; ++i) {
    if (events[i]->exists_on(connection)) {
      ids.push_back(events[i]->id_on(connection));
    } else {
      relays.push_back(relay_of(events[i], context, connection));
      ids.push_back(relays.back()->id);
    }
  }
  return ids;
}

EnqueuedCommand::EnqueuedCommand(cl_command_queue queue, cl_uint wait_count, const cl_event* wait_events,
                                 cl_event* event_out)
    : queue_(checked(queue)),
      wait_ids_(wait_list_ids(queue_->context.get(), wait_count, wait_events, queue_->connection, own_events_)),
      event_out_(event_out) {
  if (event_out_) event_id_ = queue_->connection->new_id();
  const std::optional<uint64_t> sent = queue_->all_sent();
  position_ = queue_->next_position.fetch_add(1);
  follows_all_sent_ = queue_->in_order() && sent == position_;
  // Read data a waited-for command of another queue depends on (its own, and that of the reads
  // before it on its queue) joins this queue's pending reads: waiting for this command, or for
  // any that waits for it in turn, then covers it. This queue's own reads before this command
  // are covered already (each settle counts every read at or before its position).
  for (cl_uint i = 0; i < wait_count; ++i) {
    _cl_command_queue* other = wait_events[i]->queue.get();
    if (!other || other == queue_) continue;  // a user event has no data of its own
    for (auto& read : other->unsettled(wait_events[i]->position))
      queue_->add_pending({std::move(read.incoming), position_, read.fills});
  }
}

EnqueuedCommand::~EnqueuedCommand() {
  own_events_.clear();
  queue_->calls_ended.fetch_add(1);
}

void EnqueuedCommand::ended() {
  if (follows_all_sent_) queue_->note_ended_before(position_ + 1);
}

_cl_event* EnqueuedCommand::complete(cl_command_type type, std::shared_ptr<Incoming> incoming) {
  if (!event_out_) return nullptr;
  auto* event = new _cl_event;
  event->connection = queue_->connection;
  event->id = event_id_;
  event->context = queue_->context;
  event->queue = Ref<_cl_command_queue>(queue_);
  event->command_type = type;
  event->position = position_;
  event->ends_all_before = follows_all_sent_;
  event->incoming = std::move(incoming);
  *event_out_ = publish(event);
  return event;
}

void enqueue_marker(EnqueuedCommand& command, cl_command_type type, bool barrier) {
  command.connection()->call<EnqueueMarker>(
      {.queue = command.queue()->id, .barrier = barrier, .tail = command.tail()});
  command.complete(type);
}

}  // namespace hivecl::icd

namespace {

// The host side of an event's command: the data of its own read, of the reads before it on
// its queue and of those its wait list named (see EnqueuedCommand) is in the application's
// memory. Out of order too, every earlier read counts: markers and barriers wait for all of
// them, and which ones another command waits for is not tracked.
cl_int settle(_cl_event* event) {
  cl_int status = CL_SUCCESS;
  if (event->queue) {
    const cl_int earlier = event->queue->settle(event->position);
    // Out of order, an earlier read that failed is not this command's failure.
    if (event->queue->in_order()) status = earlier;
  }
  if (event->incoming) status = std::min(status, event->incoming->wait());
  return status;
}

bool settled(_cl_event* event) {
  if (event->incoming && !event->incoming->arrived()) return false;
  return !event->queue || event->queue->settled(event->position);
}

// An ended command's status never changes again: once seen, it is answered here (a query went
// to the proxy, 4-5 us on the H100, or to the in-process session, 0.3 us more than natively).
cl_int execution_status(_cl_event* event) {
  if (const cl_int ended = event->ended_status.load(std::memory_order_acquire); ended <= CL_COMPLETE) return ended;
  if (!event->connection->available()) return peer_lost_status;
  cl_int status = CL_QUEUED;
  InfoReply reply(sizeof status, &status, nullptr);
  remote_info(event->connection, InfoFamily::event, event->id, CL_EVENT_COMMAND_EXECUTION_STATUS, reply);
  // Complete on the device is not complete for the application until its data has arrived.
  if (status == CL_COMPLETE && !settled(event)) return CL_RUNNING;
  if (status <= CL_COMPLETE) event->ended_status.store(status, std::memory_order_release);
  // As after clWaitForEvents: a clFinish of the queue then has nothing to wait for up to it.
  if (status == CL_COMPLETE && event->ends_all_before) event->queue->note_ended_before(event->position + 1);
  return status;
}

// An ended command's timestamps never change again: the first query after its end brings all
// four and later ones are answered here (a program that times its kernels reads two to four
// of them per command: each was a round trip to the proxy, about 4 µs on the H100).
void timestamp(_cl_event* event, cl_profiling_info param, InfoReply& reply) {
  const size_t index = param - CL_PROFILING_COMMAND_QUEUED;
  std::lock_guard lock(event->timestamps_mutex);
  if (!event->timestamps) {
    std::array<cl_ulong, 4> times{};
    size_t size = 0;
    InfoReply all(sizeof times, times.data(), &size);
    remote_info(event->connection, InfoFamily::event_timestamps, event->id, param, all);
    if (size != sizeof times) return reply.scalar(times[0]);  // not ended: the one asked for, as natively
    event->timestamps = times;
  }
  reply.scalar((*event->timestamps)[index]);
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint num_events, const cl_event* event_list) {
  return guarded([&] {
    if (num_events == 0 || !event_list) throw ClError{CL_INVALID_VALUE};
    std::vector<_cl_event*> events;
    for (cl_uint i = 0; i < num_events; ++i) events.push_back(checked(event_list[i]));
    // Waited for on their own connections (several in a spanning context), in turn.
    std::vector<std::pair<Connection*, std::vector<ObjectId>>> ids;
    for (_cl_event* event : events) {
      if (event->context.get() != events.front()->context.get()) throw ClError{CL_INVALID_CONTEXT};
      auto on = std::find_if(ids.begin(), ids.end(), [&](const auto& list) { return list.first == event->connection; });
      if (on == ids.end()) on = ids.insert(ids.end(), {event->connection, {}});
      on->second.push_back(event->id);
    }
    cl_int status = CL_SUCCESS;
    for (const auto& [connection, list] : ids) {
      try {
        connection->call<WaitForEvents>({.events = list});
      } catch (const ClError& error) {
        if (status == CL_SUCCESS) status = error.code;
      }
    }
    for (_cl_event* event : events)
      if (settle(event) != CL_SUCCESS && status == CL_SUCCESS) status = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    check(status);
    // A clFinish of their queues after them then has nothing to wait for up to them.
    for (_cl_event* event : events)
      if (event->ends_all_before) event->queue->note_ended_before(event->position + 1);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventInfo(cl_event event, cl_event_info param_name, size_t param_value_size,
                                               void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(event);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_EVENT_COMMAND_QUEUE: return reply.scalar(static_cast<cl_command_queue>(event->queue.get()));
      case CL_EVENT_CONTEXT: return reply.scalar(static_cast<cl_context>(event->context.get()));
      case CL_EVENT_COMMAND_TYPE: return reply.scalar(event->command_type);
      case CL_EVENT_REFERENCE_COUNT: return reply.scalar(event->refs.load());
      case CL_EVENT_COMMAND_EXECUTION_STATUS: return reply.scalar(execution_status(event));
      default: remote_info(event->connection, InfoFamily::event, event->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventProfilingInfo(cl_event event, cl_profiling_info param_name,
                                                        size_t param_value_size, void* param_value,
                                                        size_t* param_value_size_ret) {
  return guarded([&] {
    checked(event);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    if (param_name >= CL_PROFILING_COMMAND_QUEUED && param_name <= CL_PROFILING_COMMAND_END)
      return timestamp(event, param_name, reply);
    remote_info(event->connection, InfoFamily::event_profiling, event->id, param_name, reply);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainEvent(cl_event event) {
  return guarded([&] { retain(event); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseEvent(cl_event event) {
  return guarded([&] { release(event); });
}

CL_API_ENTRY cl_event CL_API_CALL clCreateUserEvent(cl_context context, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(context);
    auto event = std::make_unique<_cl_event>();
    event->connection = context->connection;
    event->id = context->connection->new_id();
    event->context = Ref<_cl_context>(context);
    event->command_type = CL_COMMAND_USER;
    context->connection->call<CreateUserEvent>({.id = event->id, .context = context->id});
    // In a spanning context, on every part: commands of any part may wait for it.
    replicate(event.get(), context, [](Connection* connection, ObjectId id, ObjectId context_there) {
      connection->call<CreateUserEvent>({.id = id, .context = context_there});
    });
    return publish(event.release());
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetUserEventStatus(cl_event event, cl_int execution_status) {
  return guarded([&] {
    checked(event);
    if (event->command_type != CL_COMMAND_USER) throw ClError{CL_INVALID_EVENT};
    if (execution_status > CL_COMPLETE) throw ClError{CL_INVALID_VALUE};
    // Every part gets the status, whichever fails; a replica's proxy that is gone is passed
    // over (the commands there fail anyway), so that the other parts' commands run on.
    std::optional<ClError> failed;
    const auto set_on = [&](Connection* connection, ObjectId id, bool replica) {
      try {
        connection->call<SetUserEventStatus>({.event = id, .execution_status = execution_status});
      } catch (const ClError& error) {
        if (!(replica && !connection->available()) && !failed) failed = error;
      }
    };
    set_on(event->connection, event->id, false);
    for (const Replica& replica : event->replicas) set_on(replica.connection, replica.id, true);
    if (failed) throw *failed;
  });
}

namespace {

using EventCallback = void(CL_CALLBACK*)(cl_event, cl_int, void*);

// Runs on the callback thread. For CL_COMPLETE the command's data must be in the application's
// memory first (a read's, and those it depends on), as it is for clWaitForEvents.
void run_event_callback(Ref<_cl_event>& event, cl_int wanted, cl_int reported, EventCallback callback,
                        void* user_data) {
  if (wanted == CL_COMPLETE && reported == CL_COMPLETE) {
    const cl_int data = settle(event.get());
    if (data != CL_SUCCESS) reported = data;
  }
  callback(event.get(), reported, user_data);
  event = Ref<_cl_event>();  // the hold ends here, not on the MPI progress thread
}

}  // namespace

// The proxy answers when the native event reaches the status; the callback then runs once, on
// HiveCL's callback thread, with the status reached (or the command's error, negative).
CL_API_ENTRY cl_int CL_API_CALL clSetEventCallback(cl_event event, cl_int command_exec_callback_type,
                                                   EventCallback pfn_notify, void* user_data) {
  return guarded([&] {
    checked(event);
    if (!pfn_notify || (command_exec_callback_type != CL_SUBMITTED && command_exec_callback_type != CL_RUNNING &&
                        command_exec_callback_type != CL_COMPLETE))
      throw ClError{CL_INVALID_VALUE};
    auto hold = std::make_shared<Ref<_cl_event>>(event);
    const cl_int wanted = command_exec_callback_type;
    event->connection->call_later<WatchEvent>(
        {.event = event->id, .status = wanted},
        [hold, wanted, pfn_notify, user_data](cl_int status, const WatchEvent::Reply& reply) {
          const cl_int reported = watched_status(status, reply);
          TaskThread::callbacks().post([hold, wanted, reported, pfn_notify, user_data] {
            run_event_callback(*hold, wanted, reported, pfn_notify, user_data);
          });
        });
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue command_queue,
                                                            cl_uint num_events_in_wait_list,
                                                            const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    enqueue_marker(command, CL_COMMAND_MARKER, false);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueBarrierWithWaitList(cl_command_queue command_queue,
                                                             cl_uint num_events_in_wait_list,
                                                             const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    enqueue_marker(command, CL_COMMAND_BARRIER, true);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueMarker(cl_command_queue command_queue, cl_event* event) {
  return guarded([&] {
    checked(command_queue);
    if (!event) throw ClError{CL_INVALID_VALUE};
    EnqueuedCommand command(command_queue, 0, nullptr, event);
    enqueue_marker(command, CL_COMMAND_MARKER, false);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueBarrier(cl_command_queue command_queue) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, 0, nullptr, nullptr);
    enqueue_marker(command, CL_COMMAND_BARRIER, true);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWaitForEvents(cl_command_queue command_queue, cl_uint num_events,
                                                       const cl_event* event_list) {
  return guarded([&] {
    if (num_events == 0 || !event_list) {
      checked(command_queue);
      throw ClError{CL_INVALID_VALUE};
    }
    EnqueuedCommand command(command_queue, num_events, event_list, nullptr);
    enqueue_marker(command, CL_COMMAND_BARRIER, true);
  });
}
