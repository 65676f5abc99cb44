// Memory-object family on the proxy side: buffers and their transfers.
#include <CL/cl.h>

#include <algorithm>

#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

uint64_t mem_size(cl_mem mem) {
  size_t size = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr));
  return size;
}

// The queue, wait list and buffer of a read or write, with the range checked before any
// host memory is set aside for it.
struct Transfer {
  Enqueue enqueue;
  cl_mem mem;
};

template <class Request>
Transfer prepare_transfer(Call& call, const Request& request) {
  Transfer transfer{prepare_enqueue(call, request.queue, request.tail), call.session.get<cl_mem>(request.mem)};
  const uint64_t total = mem_size(transfer.mem);
  if (request.offset > total || request.size > total - request.offset) throw ClError{CL_INVALID_VALUE};
  return transfer;
}

// The largest buffer any device of the context may hold: a bound for initial data.
uint64_t max_alloc_size(cl_context context) {
  const Bytes value = query_info([&](size_t n, void* v, size_t* r) { return clGetContextInfo(context, CL_CONTEXT_DEVICES, n, v, r); });
  std::vector<cl_device_id> devices(value.size() / sizeof(cl_device_id));
  std::memcpy(devices.data(), value.data(), devices.size() * sizeof(cl_device_id));
  cl_ulong largest = 0;
  for (cl_device_id device : devices) {
    cl_ulong size = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof size, &size, nullptr);
    largest = std::max(largest, size);
  }
  return largest;
}

}  // namespace

CreateBuffer::Reply execute(Call& call, const CreateBuffer::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id, request.size);
  const cl_context context = session.get<cl_context>(request.context);
  // The proxy cannot use the client's memory: the client turns USE_HOST_PTR into COPY_HOST_PTR.
  const bool copies = (request.flags & CL_MEM_COPY_HOST_PTR) != 0;
  if ((request.flags & CL_MEM_USE_HOST_PTR) || copies != request.with_data) throw ClError{CL_INVALID_VALUE};
  std::shared_ptr<HostBuffer> data;
  if (request.with_data) {
    if (request.size == 0 || request.size > max_alloc_size(context)) throw ClError{CL_INVALID_BUFFER_SIZE};
    data = session.receive_bulk(call.sequence, request.size);
    call.bulk_consumed = true;
  }
  cl_int status = CL_SUCCESS;
  const cl_mem mem = clCreateBuffer(context, request.flags, request.size, data ? data->data.get() : nullptr, &status);
  check(status);
  session.add(request.id, ObjectKind::mem, mem, request.size);
  return {};
}

// The device writes into staging memory; when it is done, a callback sends the data
// (and the command's status) to the client on the request's data tag.
ReadBuffer::Reply execute(Call& call, const ReadBuffer::Request& request) {
  Session& session = call.session;
  const auto [enqueue, mem] = prepare_transfer(call, request);
  auto staging = std::make_shared<HostBuffer>(request.size);
  cl_event event = nullptr;
  check(clEnqueueReadBuffer(enqueue.queue, mem, CL_FALSE, request.offset, request.size, staging->data.get(),
                            enqueue.wait_count(), enqueue.wait_list(), &event));
  when_complete(event, [replier = session.replier(call.sequence), staging, chunk = session.chunk_bytes()](
                           cl_int status) { replier.send_bulk(staging, chunk, status); });
  keep_event(call, request.tail.event, event);
  check(clFlush(enqueue.queue));
  return {};
}

WriteBuffer::Reply execute(Call& call, const WriteBuffer::Request& request) {
  const auto [enqueue, mem] = prepare_transfer(call, request);
  auto data = call.session.receive_bulk(call.sequence, request.size);
  call.bulk_consumed = true;
  cl_event event = nullptr;
  check(clEnqueueWriteBuffer(enqueue.queue, mem, CL_FALSE, request.offset, request.size, data->data.get(),
                             enqueue.wait_count(), enqueue.wait_list(), &event));
  when_complete(event, [data](cl_int) {});  // keeps the staging memory until the device has it
  keep_event(call, request.tail.event, event);
  return {};
}

CopyBuffer::Reply execute(Call& call, const CopyBuffer::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem source = call.session.get<cl_mem>(request.source);
  const cl_mem destination = call.session.get<cl_mem>(request.destination);
  cl_event event = nullptr;
  check(clEnqueueCopyBuffer(enqueue.queue, source, destination, request.source_offset, request.destination_offset,
                            request.size, enqueue.wait_count(), enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

FillBuffer::Reply execute(Call& call, const FillBuffer::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem mem = call.session.get<cl_mem>(request.mem);
  cl_event event = nullptr;
  check(clEnqueueFillBuffer(enqueue.queue, mem, request.pattern.empty() ? nullptr : request.pattern.data(),
                            request.pattern.size(), request.offset, request.size, enqueue.wait_count(),
                            enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

}  // namespace hivecl::proxy
