// Command-queue family on the client side.
#include <CL/cl.h>

#include <algorithm>

#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

// A read already pending at or before `read`'s position covers it: each settle counts every
// read at or before its position (waits between two queues would otherwise copy the same reads
// back and forth).
void _cl_command_queue::add_pending(PendingRead read) {
  std::lock_guard lock(pending_mutex_);
  std::erase_if(pending_, [](const PendingRead& r) { return r.incoming->arrived(); });
  const bool covered = std::any_of(pending_.begin(), pending_.end(), [&](const PendingRead& r) {
    return r.incoming == read.incoming && r.position <= read.position;
  });
  if (!covered) pending_.push_back(std::move(read));
}

cl_int _cl_command_queue::settle(uint64_t position, HostRange range) {
  std::vector<PendingRead> due;
  {
    std::lock_guard lock(pending_mutex_);
    for (auto& read : pending_)
      if (read.position <= position && read.fills.overlaps(range)) due.push_back(read);
  }
  cl_int worst = CL_SUCCESS;
  for (auto& read : due) worst = std::min(worst, read.incoming->wait());
  std::lock_guard lock(pending_mutex_);
  std::erase_if(pending_, [](const PendingRead& r) { return r.incoming->arrived(); });
  return worst;
}

bool _cl_command_queue::settled(uint64_t position) {
  std::lock_guard lock(pending_mutex_);
  return std::none_of(pending_.begin(), pending_.end(), [&](const PendingRead& r) {
    return r.position <= position && !r.incoming->arrived();
  });
}

std::vector<PendingRead> _cl_command_queue::unsettled(uint64_t position) {
  std::lock_guard lock(pending_mutex_);
  std::vector<PendingRead> reads;
  for (const auto& read : pending_)
    if (read.position <= position && !read.incoming->arrived()) reads.push_back(read);
  return reads;
}

void _cl_command_queue::note_ended_before(uint64_t position) {
  uint64_t known = ended_before.load();
  while (known < position && !ended_before.compare_exchange_weak(known, position)) {
  }
}

// A queue whose commands are known to have ended has nothing to wait for (a blocking read then
// a clFinish is common; the clFinish cost a round trip through a proxy, 2 us natively on
// NVIDIA). Otherwise its commands have all ended once the Finish returns, if none was still on
// its way when it went out.
void _cl_command_queue::finish() {
  if (idle()) return;
  const std::optional<uint64_t> sent = all_sent();
  connection->call<Finish>({.queue = id});
  if (sent) note_ended_before(*sent);
}

namespace {

constexpr cl_command_queue_properties host_queue_properties =
    CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE;
constexpr cl_command_queue_properties known_queue_properties =
    host_queue_properties | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT;

// HiveCL offers no on-device queue (CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES is 0): a request for
// one is answered here and never reaches the native runtime (PoCL 3.1 aborts on one).
void check_queue_properties(cl_command_queue_properties properties, bool has_size) {
  const bool on_device = properties & CL_QUEUE_ON_DEVICE;
  if ((properties & ~known_queue_properties) || ((properties & CL_QUEUE_ON_DEVICE_DEFAULT) && !on_device) ||
      (on_device && !(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) || (has_size && !on_device))
    throw ClError{CL_INVALID_VALUE};
  if (on_device) throw ClError{CL_INVALID_QUEUE_PROPERTIES};
}

// `with_properties`: made by clCreateCommandQueueWithProperties, whose list the queue keeps.
cl_command_queue create_queue(cl_context context, cl_device_id device, std::vector<cl_queue_properties> list,
                              bool with_properties) {
  checked(context);
  checked(device);
  if (!context->has_device(device)) throw ClError{CL_INVALID_DEVICE};
  cl_command_queue_properties properties = 0;
  bool has_size = false;
  for (size_t i = 0; i + 1 < list.size() && list[i] != 0; i += 2) {
    if (list[i] == CL_QUEUE_PROPERTIES) properties = list[i + 1];
    if (list[i] == CL_QUEUE_SIZE) has_size = true;
  }
  // clCreateCommandQueue defines only the OpenCL 1.x properties.
  if (!with_properties && (properties & ~host_queue_properties)) throw ClError{CL_INVALID_VALUE};
  check_queue_properties(properties, has_size);
  auto queue = std::make_unique<_cl_command_queue>();
  // On its device's part of the context (which is the whole context unless it spans).
  queue->connection = device->connection;
  queue->id = device->connection->new_id();
  queue->context = Ref<_cl_context>(context);
  queue->device = device;
  queue->properties = properties;
  if (with_properties) queue->property_list = list;
  device->connection->call<CreateCommandQueue>({.id = queue->id, .context = context->id_on(device->connection),
                                                .device = device->id, .properties = {list.begin(), list.end()}});
  return publish(queue.release());
}

}  // namespace

CL_API_ENTRY cl_command_queue CL_API_CALL clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
                                                                             const cl_queue_properties* properties,
                                                                             cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    std::vector<cl_queue_properties> list;
    for (const cl_queue_properties* p = properties; p && *p; p += 2) list.insert(list.end(), {p[0], p[1]});
    if (properties) list.push_back(0);
    return create_queue(context, device, list, true);
  });
}

CL_API_ENTRY cl_command_queue CL_API_CALL clCreateCommandQueue(cl_context context, cl_device_id device,
                                                               cl_command_queue_properties properties,
                                                               cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    std::vector<cl_queue_properties> list{CL_QUEUE_PROPERTIES, properties, 0};
    return create_queue(context, device, list, false);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainCommandQueue(cl_command_queue queue) {
  return guarded([&] { retain(queue); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseCommandQueue(cl_command_queue queue) {
  return guarded([&] { release(queue); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetCommandQueueInfo(cl_command_queue queue, cl_command_queue_info param_name,
                                                      size_t param_value_size, void* param_value,
                                                      size_t* param_value_size_ret) {
  return guarded([&] {
    checked(queue);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_QUEUE_CONTEXT: return reply.scalar(static_cast<cl_context>(queue->context.get()));
      case CL_QUEUE_DEVICE: return reply.scalar(queue->device);
      case CL_QUEUE_REFERENCE_COUNT: return reply.scalar(queue->refs.load());
      case CL_QUEUE_PROPERTIES: return reply.scalar(queue->properties);
      case CL_QUEUE_PROPERTIES_ARRAY: return reply.list(queue->property_list);
      case CL_QUEUE_DEVICE_DEFAULT: return reply.scalar(cl_command_queue{nullptr});
      default: remote_info(queue->connection, InfoFamily::command_queue, queue->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetCommandQueueProperty(cl_command_queue queue, cl_command_queue_properties,
                                                          cl_bool, cl_command_queue_properties*) {
  return guarded([&] {
    checked(queue);
    throw ClError{CL_INVALID_OPERATION};  // removed in OpenCL 1.1; properties are fixed at creation
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetDefaultDeviceCommandQueue(cl_context context, cl_device_id device,
                                                               cl_command_queue /*queue*/) {
  return guarded([&] {
    checked(context);
    checked(device);
    // No device reports on-device queues, so there is no queue to check (the CTS passes NULL).
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clFlush(cl_command_queue queue) {
  return guarded([&] {
    checked(queue);
    queue->connection->post<Flush>({.queue = queue->id});
  });
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue queue) {
  return guarded([&] {
    checked(queue);
    queue->finish();
    // Like a native clFinish, a command that failed does not fail clFinish; a lost proxy does.
    queue->settle(UINT64_MAX);
    if (!queue->connection->available()) throw ClError{peer_lost_status};
  });
}
