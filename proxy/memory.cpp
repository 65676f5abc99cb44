// Memory-object family on the proxy side: buffers and their transfers.
#include <CL/cl.h>

#include <algorithm>
#include <mutex>
#include <tuple>

#include "proxy/executors.hpp"
#include "proxy/in_place.hpp"
#include "proxy/staged.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

// The queue, wait list and buffer of a read or write, with the range checked before any
// host memory is set aside for it.
struct Transfer {
  Enqueue enqueue;
  cl_mem mem;
};

template <class Request>
Transfer prepare_transfer(Call& call, const Request& request) {
  Transfer transfer{prepare_enqueue(call, request.queue, request.tail), call.session.get<cl_mem>(request.mem)};
  check_range(transfer.mem, request.offset, request.size);
  return transfer;
}

// The largest buffer any device of the context may hold: a bound for initial data.
uint64_t max_alloc_size(cl_context context) {
  cl_ulong largest = 0;
  for (cl_device_id device : context_devices(context)) {
    cl_ulong size = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof size, &size, nullptr);
    largest = std::max(largest, size);
  }
  return largest;
}

}  // namespace

std::vector<cl_device_id> context_devices(cl_context context) {
  const Bytes value = query_info([&](size_t n, void* v, size_t* r) { return clGetContextInfo(context, CL_CONTEXT_DEVICES, n, v, r); });
  std::vector<cl_device_id> devices(value.size() / sizeof(cl_device_id));
  std::memcpy(devices.data(), value.data(), devices.size() * sizeof(cl_device_id));
  return devices;
}

void check_range(cl_mem mem, uint64_t offset, uint64_t size) {
  size_t total = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof total, &total, nullptr));
  if (offset > total || size > total - offset) throw ClError{CL_INVALID_VALUE};
}

// A client may name its own memory only on the memory and in-process data paths.
void check_data_path(Session& session, uint64_t host_address) {
  if (host_address && session.data_path().kind() == transport::DataPath::mpi) throw ClError{CL_INVALID_VALUE};
}

void check_in_place(Session& session, const InPlace& in_place, bool host_named) {
  const transport::DataPath path = session.data_path().kind();
  const bool packed = in_place.row_pitch == 0 && in_place.slice_pitch == 0 && !in_place.blocking;
  const bool allowed = in_place.used ? host_named && path != transport::DataPath::mpi &&
                                           (!in_place.blocking || path == transport::DataPath::in_process)
                                     : packed;
  if (!allowed) throw ClError{CL_INVALID_VALUE};
}

uint64_t pitched_span(uint64_t row, uint64_t rows, uint64_t slices, uint64_t row_pitch, uint64_t slice_pitch) {
  if (!row_pitch) row_pitch = row;
  uint64_t slice = 0, before_last_row = 0, before_last_slice = 0, span = 0;
  if (rows == 0 || slices == 0 || row_pitch < row || __builtin_mul_overflow(row_pitch, rows, &slice))
    throw ClError{CL_INVALID_VALUE};
  if (!slice_pitch) slice_pitch = slice;
  if (slice_pitch < slice || __builtin_mul_overflow(row_pitch, rows - 1, &before_last_row) ||
      __builtin_mul_overflow(slice_pitch, slices - 1, &before_last_slice) ||
      __builtin_add_overflow(row, before_last_row, &span) || __builtin_add_overflow(span, before_last_slice, &span))
    throw ClError{CL_INVALID_VALUE};
  return span;
}

std::shared_ptr<HostBuffer> receive_data(Call& call, uint64_t host_address, uint64_t size) {
  Session& session = call.session;
  auto data = std::make_shared<HostBuffer>(size);
  // In the chunks the client cuts (over MPI each is a message), all under way at once; every
  // one is waited for before the memory may go.
  std::vector<std::shared_ptr<transport::Completion>> arriving;
  for (uint64_t offset = 0; offset < size; offset += session.chunk_bytes()) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(session.chunk_bytes(), size - offset));
    arriving.push_back(session.data_path().fetch(call.sequence, host_address, offset, data->data.get() + offset, piece));
  }
  call.bulk_consumed = true;
  bool arrived = true;
  for (const auto& piece : arriving) arrived = piece->wait() == transport::OpStatus::done && arrived;
  if (!arrived) throw ClError{peer_lost_status};
  session.statistics().count_to_proxy(size);
  return data;
}

void hold_until_complete(cl_event event, std::shared_ptr<HostBuffer> data) {
  when_complete(event, [data = std::move(data)](cl_int) {});
}

void deliver_when_filled(Session& session, cl_event event, const Replier& later, uint64_t host_address,
                         std::shared_ptr<HostBuffer> data) {
  when_complete(event, [&session, later, host_address, data](cl_int status) {
    const size_t chunk = session.chunk_bytes();
    for (uint64_t offset = 0; offset < data->size; offset += chunk) {
      const size_t piece = std::min<uint64_t>(chunk, data->size - offset);
      // Each chunk holds the data until it is sent.
      session.data_path().deliver(later.sequence(), host_address, offset, data->data.get() + offset, piece,
                                  [data] {});
    }
    later.send_status(status < 0 ? status : CL_SUCCESS);
  });
}

StagingRing& staging_of(Session& session, cl_command_queue queue) {
  const Session::QueueFacts facts = session.facts_of(queue);
  return session.staging(facts.context, facts.device);
}

std::pair<std::shared_ptr<AttachedSegment>, std::byte*> segment_memory(Call& call, const Enqueue& enqueue,
                                                                       const SharedRange& range, uint64_t size) {
  auto segment = call.session.shared_segment(range);
  std::byte* memory = segment->memory(enqueue.facts.context, range.offset, size);
  return {std::move(segment), memory};
}

namespace {

// clEnqueueReadBuffer or clEnqueueWriteBuffer bound to a range of a buffer and host memory
// (in_place.hpp).
template <class Native>
auto bind_transfer(Native native, cl_mem mem, uint64_t offset, uint64_t size, void* host) {
  return [=](cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list,
             cl_event* event) { return native(queue, mem, blocking, offset, size, host, wait_count, wait_list, event); };
}

// In-process a buffer's transfer is made by the native runtime from or into the application's
// memory (in_place.hpp). Memory in a shared segment (a mapped CL_MEM_ALLOC_HOST_PTR buffer)
// goes through the segment's page-locked mapping.
template <class Native, class Request>
void buffer_in_place(Call& call, Native native, const Enqueue& enqueue, cl_mem mem, const Request& request,
                     const Replier& status_to) {
  std::shared_ptr<AttachedSegment> segment;
  void* host = reinterpret_cast<void*>(request.host_address);
  if (request.shared.segment) std::tie(segment, host) = segment_memory(call, enqueue, request.shared, request.size);
  transfer_in_place(call, bind_transfer(native, mem, request.offset, request.size, host), enqueue, request.queue,
                    request.tail.event, request.blocking, std::move(segment), status_to);
}

// In-process, a non-blocking write from memory that the client frees once the call returns
// (an unmap's shadow, which a release may free at once): the device reads a copy, kept until
// the command has ended.
void write_copy_in_place(Call& call, const Enqueue& enqueue, cl_mem mem, const WriteBuffer::Request& request) {
  const auto* host = reinterpret_cast<const std::byte*>(request.host_address);
  auto copy = std::make_shared<const Bytes>(host, host + request.size);
  cl_event event = nullptr;
  check(clEnqueueWriteBuffer(enqueue.queue, mem, CL_FALSE, request.offset, request.size, copy->data(),
                             enqueue.wait_count(), enqueue.wait_list(), &event));
  when_complete(event, [copy](cl_int) {});
  keep_event(call, request.tail.event, event);
}

// A range of a buffer through the staging ring (staged.hpp): one row of bytes.
template <class Native>
StagedTransfer staged_range(Native native, cl_mem mem, uint64_t offset, uint64_t size, uint64_t host_address) {
  return {.region = {size, 1, 1}, .client = {.address = host_address},
          .enqueue = [native, mem, offset](const Enqueue& enqueue, const BoxPiece& piece, std::byte* data,
                                           cl_event* event) {
            return native(enqueue.queue, mem, CL_FALSE, offset + piece.origin[0], piece.bytes, data,
                          enqueue.wait_count(), enqueue.wait_list(), event);
          }};
}

// The native command of a transfer of nothing, for its checks and event.
template <class Native>
cl_event enqueue_empty(Native native, const Enqueue& enqueue, cl_mem mem, uint64_t offset) {
  static std::byte nothing;
  cl_event event = nullptr;
  check(native(enqueue.queue, mem, CL_FALSE, offset, 0, &nothing, enqueue.wait_count(), enqueue.wait_list(), &event));
  return event;
}

// A range of a buffer and host memory in a shared segment (transfer_with_segment).
template <class Native>
cl_event buffer_with_segment(Call& call, Native native, const Enqueue& enqueue, cl_mem mem, uint64_t offset,
                             uint64_t size, const SharedRange& range, std::function<void(cl_int)> done) {
  auto [segment, memory] = segment_memory(call, enqueue, range, size);
  return transfer_with_segment(bind_transfer(native, mem, offset, size, memory), enqueue, std::move(segment),
                               std::move(done));
}

// The reply that the read was accepted, unless the client did not wait for it.
void confirm(Session& session, const ReadBuffer::Request& request, const Replier& later) {
  if (!answered_only_on_failure<ReadBuffer>(request, in_process(session))) later.reply<ReadBuffer>(CL_SUCCESS);
}

// The device fills staging slots chunk by chunk; each filled chunk goes to the client
// (and its slot back to the ring), then the read's status follows on the data tag (after the
// device's end of every chunk: protocol::answered_after_end). The reply comes once the first
// chunk is enqueued: the client then expects the data, and on the MPI path a read larger than
// the ring waits for the client to take chunks.
void read_buffer(Call& call, const ReadBuffer::Request& request, const Replier& later) {
  Session& session = call.session;
  const auto [enqueue, mem] = prepare_transfer(call, request);
  check_data_path(session, request.host_address);
  session.statistics().count_to_client(request.size);
  if (in_process(session)) {
    buffer_in_place(call, clEnqueueReadBuffer, enqueue, mem, request, later);
    confirm(session, request, later);
    return;
  }
  if (request.size == 0) {
    keep_event(call, request.tail.event, enqueue_empty(clEnqueueReadBuffer, enqueue, mem, request.offset));
    confirm(session, request, later);
    later.send_status(CL_SUCCESS);
    return;
  }
  // Its status goes with those of the reads after it; out of order, the reports' marker would
  // wait for every command before it too (natively the read may end first).
  if (reported_together(request) && enqueue.facts.in_order) {
    auto [segment, memory] = segment_memory(call, enqueue, request.shared, request.size);
    const cl_event event = transfer_unwatched(
        call, bind_transfer(clEnqueueReadBuffer, mem, request.offset, request.size, memory), enqueue,
        request.tail.event, segment.get());
    session.read_reports().add(enqueue.queue, call.sequence, std::move(segment), event);
    return;
  }
  if (request.shared.segment) {
    const cl_event event = buffer_with_segment(call, clEnqueueReadBuffer, enqueue, mem, request.offset, request.size,
                                               request.shared, [later](cl_int status) { later.send_status(status); });
    confirm(session, request, later);
    keep_event(call, request.tail.event, event);
    return;
  }
  read_staged(call, enqueue, staged_range(clEnqueueReadBuffer, mem, request.offset, request.size, request.host_address),
              later, [&] { confirm(session, request, later); }, request.tail.event);
}

// Answered once the proxy holds the data (the application may then reuse its memory): after
// the staging ring took it, or, from a shared segment, after the device did (the client then
// knows the queue's commands before it to have ended: protocol::answered_after_end). A write
// the client did not wait for, from a shared segment, is not answered unless it fails: the
// device reads the application's memory itself, as natively, and reports nothing
// (transfer_unwatched).
void write_buffer(Call& call, const WriteBuffer::Request& request, const Replier& later) {
  const auto [enqueue, mem] = prepare_transfer(call, request);
  check_data_path(call.session, request.host_address);
  call.session.statistics().count_to_proxy(request.size);
  if (in_process(call.session)) {
    call.bulk_consumed = true;
    if (request.transient && !request.blocking && !request.shared.segment) {
      write_copy_in_place(call, enqueue, mem, request);
    } else {
      buffer_in_place(call, clEnqueueWriteBuffer, enqueue, mem, request, later);
    }
    confirm_in_place<WriteBuffer>(request, later);
    return;
  }
  if (request.size == 0) {
    call.bulk_consumed = true;
    keep_event(call, request.tail.event, enqueue_empty(clEnqueueWriteBuffer, enqueue, mem, request.offset));
  } else if (answered_only_on_failure<WriteBuffer>(request, false)) {
    call.bulk_consumed = true;
    const auto [segment, memory] = segment_memory(call, enqueue, request.shared, request.size);
    transfer_unwatched(call, bind_transfer(clEnqueueWriteBuffer, mem, request.offset, request.size, memory), enqueue,
                       request.tail.event, segment.get());
    return;
  } else if (request.shared.segment) {
    call.bulk_consumed = true;
    keep_event(call, request.tail.event,
               buffer_with_segment(call, clEnqueueWriteBuffer, enqueue, mem, request.offset, request.size,
                                   request.shared, [later](cl_int status) { later.reply<WriteBuffer>(status); }));
    return;
  } else {
    keep_event(call, request.tail.event,
               write_staged(call, enqueue,
                            staged_range(clEnqueueWriteBuffer, mem, request.offset, request.size, request.host_address)));
  }
  later.reply<WriteBuffer>(CL_SUCCESS);
}

// The buffer of a request, made by the native runtime from its initial contents (if any), which
// it copies before returning: in place in-process (CL_MEM_USE_HOST_PTR: it keeps using them),
// else received into memory of the proxy's own.
cl_mem create_from_data(Call& call, cl_context context, const CreateBuffer::Request& request) {
  Session& session = call.session;
  Session::Bulk bulk;
  std::shared_ptr<HostBuffer> fetched;
  const std::byte* data = nullptr;
  if (request.flags & CL_MEM_USE_HOST_PTR) {
    data = reinterpret_cast<const std::byte*>(request.host_address);
  } else if (request.host_address) {
    fetched = receive_data(call, request.host_address, request.size);
    data = fetched->data.get();
  } else if (request.with_data) {
    bulk = session.receive_bulk(call.sequence, request.size);
    call.bulk_consumed = true;
    data = bulk.bytes;
  }
  cl_int status = CL_SUCCESS;
  const cl_mem mem = clCreateBuffer(context, request.flags, request.size, const_cast<std::byte*>(data), &status);
  check(status);
  return mem;
}

// From this size on, a buffer's initial contents on the memory data path go through the staging
// ring: below it, a queue of its own costs more than the copy it spares.
constexpr uint64_t staged_creation_bytes = uint64_t{1} << 20;

// The buffer made empty, then filled from the client's memory through the staging ring
// (fill_staged): one copy, into page-locked slots, where the native CL_MEM_COPY_HOST_PTR path
// takes two (into the proxy's memory, then the runtime's own copy, about 2 GB/s on NVIDIA's).
cl_mem create_staged(Call& call, cl_context context, const CreateBuffer::Request& request) {
  cl_int status = CL_SUCCESS;
  const cl_mem mem =
      clCreateBuffer(context, request.flags & ~cl_mem_flags{CL_MEM_COPY_HOST_PTR}, request.size, nullptr, &status);
  check(status);
  fill_staged(call, context, context_devices(context).front(), mem,
              staged_range(clEnqueueWriteBuffer, mem, 0, request.size, request.host_address));
  return mem;
}

}  // namespace

// A CL_MEM_USE_HOST_PTR buffer inside one of the session's SVM allocations uses its memory.
cl_mem create_over_svm(const Session& session, cl_context context, const CreateBuffer::Request& request) {
  if (!(request.flags & CL_MEM_USE_HOST_PTR) || request.with_data || request.host_address ||
      request.size > UINT64_MAX - request.svm.offset)
    throw ClError{CL_INVALID_VALUE};
  void* start = session.svm_address(request.svm, CL_INVALID_HOST_PTR);
  session.svm_address({request.svm.allocation, request.svm.offset + request.size}, CL_INVALID_HOST_PTR);
  cl_int status = CL_SUCCESS;
  const cl_mem mem = clCreateBuffer(context, request.flags, request.size, start, &status);
  check(status);
  return mem;
}

CreateBuffer::Reply execute(Call& call, const CreateBuffer::Request& request) {
  Session& session = call.session;
  if (request.svm.allocation != no_object) {
    session.check_fresh(request.id);  // its memory is its allocation's, counted there
    const cl_context context = session.get<cl_context>(request.context);
    session.add(request.id, ObjectKind::mem, create_over_svm(session, context, request));
    return {};
  }
  session.check_fresh(request.id, request.size);
  const cl_context context = session.get<cl_context>(request.context);
  // Only in-process may the native runtime use the client's memory itself; elsewhere the client
  // turns CL_MEM_USE_HOST_PTR into CL_MEM_COPY_HOST_PTR.
  const bool uses = (request.flags & CL_MEM_USE_HOST_PTR) != 0;
  const bool copies = (request.flags & CL_MEM_COPY_HOST_PTR) != 0;
  if ((uses && (!in_process(session) || !request.host_address)) || (uses || copies) != request.with_data)
    throw ClError{CL_INVALID_VALUE};
  if (request.host_address && !request.with_data) throw ClError{CL_INVALID_VALUE};
  check_data_path(session, request.host_address);
  if (request.with_data && (request.size == 0 || request.size > max_alloc_size(context)))
    throw ClError{CL_INVALID_BUFFER_SIZE};
  const bool staged = copies && request.host_address && request.size >= staged_creation_bytes &&
                      session.data_path().kind() == transport::DataPath::memory;
  const cl_mem mem = staged ? create_staged(call, context, request) : create_from_data(call, context, request);
  session.add(request.id, ObjectKind::mem, mem, request.size);
  return {};
}

// The native allocation and the buffer over it through which transfers reach it (messages.hpp).
SvmAlloc::Reply execute(Call& call, const SvmAlloc::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id, request.size);
  const cl_context context = session.get<cl_context>(request.context);
  constexpr cl_svm_mem_flags access = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
  // Coarse-grained buffers only: HiveCL moves their data at mappings, as that kind allows.
  if (request.flags & ~access) throw ClError{CL_INVALID_VALUE};
  if (request.size == 0 || request.size > max_alloc_size(context)) throw ClError{CL_INVALID_BUFFER_SIZE};
  void* base = clSVMAlloc(context, request.flags, request.size, request.alignment);
  if (!base) throw ClError{CL_OUT_OF_RESOURCES};  // the runtime says no more than that
  cl_int status = CL_SUCCESS;
  const cl_mem buffer = clCreateBuffer(context, CL_MEM_USE_HOST_PTR | request.flags, request.size, base, &status);
  if (status != CL_SUCCESS) {
    clSVMFree(context, base);
    throw ClError{status};
  }
  session.add(request.id, ObjectKind::mem, buffer, request.size);
  session.note_svm(buffer, {.context = context, .base = static_cast<std::byte*>(base), .size = request.size});
  return {.address = reinterpret_cast<uint64_t>(base)};
}

void execute(Call& call, const ReadBuffer::Request& request, const Replier& later) {
  try {
    read_buffer(call, request, later);
  } catch (const ClError& error) {
    // The client waits for this read's status too.
    if (event_handed_out_unanswered(call.session, request.detached)) {
      keep_failed_event(call, request.queue, request.tail.event, error.code);
      later.send_status(error.code);
    }
    throw;
  }
}

void execute(Call& call, const WriteBuffer::Request& request, const Replier& later) {
  try {
    write_buffer(call, request, later);
  } catch (const ClError& error) {
    if (event_handed_out_unanswered(call.session, request.detached))
      keep_failed_event(call, request.queue, request.tail.event, error.code);
    throw;
  }
}

namespace {

// In-process, an SVM allocation's own buffer is mapped only by clEnqueueSVMMap (icd/svm.cpp), and
// is mapped as SVM: NVIDIA maps SVM about 4 µs faster than any buffer, whatever its size
// (docs/PERFORMANCE.md). Its unmap is then the SVM's too (UnmapMemObject).
void map_svm(Call& call, const MapBuffer::Request& request, const Transfer& map, std::byte* base, const Replier& later) {
  map_natively<MapBuffer>(call,
                          [start = base + request.offset, flags = request.flags, size = request.size](
                              cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list,
                              cl_event* event, cl_int* status) -> MapBuffer::Reply {
                            *status = clEnqueueSVMMap(queue, blocking, flags, start, size, wait_count, wait_list, event);
                            return {.address = *status == CL_SUCCESS ? reinterpret_cast<uint64_t>(start) : 0};
                          },
                          map.enqueue, request.tail.event, request.blocking, later);
}

}  // namespace

void execute(Call& call, const MapBuffer::Request& request, const Replier& later) {
  const Transfer map = prepare_transfer(call, request);
  if (const Session::SvmAllocation* svm = call.session.svm_allocation(map.mem))
    return map_svm(call, request, map, svm->base, later);
  map_natively<MapBuffer>(call,
                          [mem = map.mem, flags = request.flags, offset = request.offset, size = request.size](
                              cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list,
                              cl_event* event, cl_int* status) -> MapBuffer::Reply {
                            void* address = clEnqueueMapBuffer(queue, mem, blocking, flags, offset, size, wait_count,
                                                               wait_list, event, status);
                            return {.address = reinterpret_cast<uint64_t>(address)};
                          },
                          map.enqueue, request.tail.event, request.blocking, later);
}

// The native runtime refuses an address it did not map.
UnmapMemObject::Reply execute(Call& call, const UnmapMemObject::Request& request) {
  if (!in_process(call.session)) throw ClError{CL_INVALID_VALUE};
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem mem = call.session.get<cl_mem>(request.mem);
  void* const address = reinterpret_cast<void*>(request.address);
  cl_event event = nullptr;
  check(call.session.svm_allocation(mem)
            ? clEnqueueSVMUnmap(enqueue.queue, address, enqueue.wait_count(), enqueue.wait_list(),
                                event_wanted(request.tail.event, event))
            : clEnqueueUnmapMemObject(enqueue.queue, mem, address, enqueue.wait_count(), enqueue.wait_list(),
                                      event_wanted(request.tail.event, event)));
  keep_event(call, request.tail.event, event);
  return {};
}

ForgetSegment::Reply execute(Call& call, const ForgetSegment::Request& request) {
  call.session.forget_shared_segment(request.segment);
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

namespace hivecl::proxy {

using namespace protocol;

CreateSubBuffer::Reply execute(Call& call, const CreateSubBuffer::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_mem parent = session.get<cl_mem>(request.parent);
  const cl_buffer_region region{request.origin, request.size};
  cl_int status = CL_SUCCESS;
  const cl_mem mem = clCreateSubBuffer(parent, request.flags, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
  check(status);
  session.add(request.id, ObjectKind::mem, mem);  // its memory is its parent's
  return {};
}

namespace {

// The packed host side of a rectangular transfer: its size, checked against what one request
// may carry, so that a forged region costs no memory.
uint64_t packed_bytes(Session& session, const BufferBox& box) {
  if (!box.valid()) throw ClError{CL_INVALID_VALUE};
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(box.region[0], box.region[1], &bytes) ||
      __builtin_mul_overflow(bytes, box.region[2], &bytes) || bytes == 0 || bytes > session.max_bulk_bytes())
    throw ClError{CL_INVALID_VALUE};
  return bytes;
}

static_assert(sizeof(size_t) == sizeof(uint64_t));
const size_t* sizes(const std::vector<uint64_t>& values) { return reinterpret_cast<const size_t*>(values.data()); }

}  // namespace

namespace {

// What a rectangular read or write needs, checked before any host memory is set aside for it.
struct RectCommand {
  Enqueue enqueue;
  cl_mem mem;
  uint64_t packed_bytes;  // of the box
};

template <class Request>
RectCommand prepare_rect(Call& call, const Request& request) {
  RectCommand command{prepare_enqueue(call, request.queue, request.tail), call.session.get<cl_mem>(request.mem), 0};
  check_data_path(call.session, request.host_address);
  check_host_memory(call.session, request);
  command.packed_bytes = packed_bytes(call.session, request.box);
  return command;
}

// clEnqueueReadBufferRect or clEnqueueWriteBufferRect of a box of a buffer, with host memory
// from `host` on laid out with the host pitches given (in_place.hpp).
template <class Native>
auto bind_rect(Native native, cl_mem mem, const BufferBox& box, void* host, size_t host_row_pitch,
               size_t host_slice_pitch) {
  const std::array<size_t, 3> origin{box.origin[0], box.origin[1], box.origin[2]};
  const std::array<size_t, 3> region{box.region[0], box.region[1], box.region[2]};
  return [=, row_pitch = box.row_pitch, slice_pitch = box.slice_pitch](
             cl_command_queue queue, cl_bool blocking, cl_uint wait_count, const cl_event* wait_list, cl_event* event) {
    constexpr size_t host_origin[3] = {0, 0, 0};
    return native(queue, mem, blocking, origin.data(), host_origin, region.data(), row_pitch, slice_pitch,
                  host_row_pitch, host_slice_pitch, host, wait_count, wait_list, event);
  };
}

// The native call with packed host memory of the proxy's own.
template <class Native>
auto bind_packed_rect(Native native, cl_mem mem, const BufferBox& box, std::byte* data) {
  return bind_rect(native, mem, box, data, box.region[0], box.region[0] * box.region[1]);
}

// A box of a buffer through the staging ring (staged.hpp), each piece a box of its own.
template <class Native, class Request>
StagedTransfer staged_box(Native native, cl_mem mem, const Request& request) {
  const BufferBox& box = request.box;
  const InPlace& host = request.in_place;  // the client's pitches, on the memory path
  return {.region = {box.region[0], box.region[1], box.region[2]},
          .client = {.address = request.host_address, .row_pitch = host.row_pitch, .slice_pitch = host.slice_pitch},
          .enqueue = [native, mem, box](const Enqueue& enqueue, const BoxPiece& piece, std::byte* data,
                                        cl_event* event) {
            const size_t origin[3] = {box.origin[0] + piece.origin[0], box.origin[1] + piece.origin[1],
                                      box.origin[2] + piece.origin[2]};
            constexpr size_t host_origin[3] = {0, 0, 0};
            return native(enqueue.queue, mem, CL_FALSE, origin, host_origin, piece.region.data(), box.row_pitch,
                          box.slice_pitch, piece.region[0], piece.region[0] * piece.region[1], data,
                          enqueue.wait_count(), enqueue.wait_list(), event);
          }};
}

// In-process the native runtime moves the application's memory itself, with its pitches.
template <class Native, class Request>
void rect_in_place(Call& call, Native native, const RectCommand& command, const Request& request,
                   const Replier& status_to) {
  const InPlace& host = request.in_place;
  transfer_in_place(call,
                    bind_rect(native, command.mem, request.box, reinterpret_cast<void*>(request.host_address),
                              host.row_pitch, host.slice_pitch),
                    command.enqueue, request.queue, request.tail.event, host.blocking, nullptr, status_to);
}

// Host memory in a shared segment (a mapping, through a proxy of this node): the native
// runtime moves the box straight to or from the segment's page-locked mapping, with the
// client's pitches (transfer_with_segment).
template <class Native, class Request>
cl_event rect_with_segment(Call& call, Native native, const RectCommand& command, const Request& request,
                           std::function<void(cl_int)> done) {
  const InPlace& host = request.in_place;
  const BufferBox& box = request.box;
  auto [segment, memory] = segment_memory(
      call, command.enqueue, request.shared,
      pitched_span(box.region[0], box.region[1], box.region[2], host.row_pitch, host.slice_pitch));
  return transfer_with_segment(bind_rect(native, command.mem, box, memory, host.row_pitch, host.slice_pitch),
                               command.enqueue, std::move(segment), std::move(done));
}

}  // namespace

// On the memory data path the packed data comes through the staging ring, piece by piece (each
// a box of whole slices, rows or a part of a row). Over MPI it arrives whole into host memory of
// its own, which the native command reads with the packed pitches; it is freed when the command
// completes. In-process the native runtime reads the application's memory itself.
void execute(Call& call, const WriteBufferRect::Request& request, const Replier& later) {
  const RectCommand command = prepare_rect(call, request);
  if (in_process(call.session) && request.in_place.used) {
    call.bulk_consumed = true;
    call.session.statistics().count_to_proxy(command.packed_bytes);
    rect_in_place(call, clEnqueueWriteBufferRect, command, request, later);
    confirm_in_place<WriteBufferRect>(request, later);
    return;
  }
  const Enqueue& enqueue = command.enqueue;
  if (request.shared.segment) {  // answered once the device has read the segment
    call.bulk_consumed = true;
    call.session.statistics().count_to_proxy(command.packed_bytes);
    keep_event(call, request.tail.event,
               rect_with_segment(call, clEnqueueWriteBufferRect, command, request,
                                 [later](cl_int status) { later.reply<WriteBufferRect>(status); }));
    return;
  }
  if (call.session.data_path().kind() == transport::DataPath::memory) {
    call.session.statistics().count_to_proxy(command.packed_bytes);
    keep_event(call, request.tail.event,
               write_staged(call, enqueue, staged_box(clEnqueueWriteBufferRect, command.mem, request)));
    later.reply<WriteBufferRect>(CL_SUCCESS);
    return;
  }
  const std::shared_ptr<HostBuffer> data = receive_data(call, request.host_address, command.packed_bytes);
  cl_event event = nullptr;
  check(bind_packed_rect(clEnqueueWriteBufferRect, command.mem, request.box, data->data.get())(
      enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  clFlush(enqueue.queue);
  hold_until_complete(event, data);
  keep_event(call, request.tail.event, event);
  later.reply<WriteBufferRect>(CL_SUCCESS);
}

// On the memory data path the device fills staging slots piece by piece, each going to the
// client once filled. Over MPI it fills host memory of its own with the packed box; once it has,
// the data goes to the client chunk by chunk, then the read's status. In-process the native
// runtime writes the application's memory itself.
void execute(Call& call, const ReadBufferRect::Request& request, const Replier& later) {
  Session& session = call.session;
  const RectCommand command = prepare_rect(call, request);
  session.statistics().count_to_client(command.packed_bytes);
  if (in_process(session) && request.in_place.used) {
    rect_in_place(call, clEnqueueReadBufferRect, command, request, later);
    confirm_in_place<ReadBufferRect>(request, later);
    return;
  }
  const Enqueue& enqueue = command.enqueue;
  if (request.shared.segment) {
    const cl_event event = rect_with_segment(call, clEnqueueReadBufferRect, command, request,
                                             [later](cl_int status) { later.send_status(status); });
    later.reply<ReadBufferRect>(CL_SUCCESS);
    keep_event(call, request.tail.event, event);
    return;
  }
  if (session.data_path().kind() == transport::DataPath::memory)
    return read_staged(call, enqueue, staged_box(clEnqueueReadBufferRect, command.mem, request), later,
                       [&] { later.reply<ReadBufferRect>(CL_SUCCESS); }, request.tail.event);
  const auto data = std::make_shared<HostBuffer>(command.packed_bytes);
  cl_event event = nullptr;
  check(bind_packed_rect(clEnqueueReadBufferRect, command.mem, request.box, data->data.get())(
      enqueue.queue, CL_FALSE, enqueue.wait_count(), enqueue.wait_list(), &event));
  clFlush(enqueue.queue);
  later.reply<ReadBufferRect>(CL_SUCCESS);
  deliver_when_filled(session, event, later, request.host_address, data);
  keep_event(call, request.tail.event, event);
}

CopyBufferRect::Reply execute(Call& call, const CopyBufferRect::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_mem source = call.session.get<cl_mem>(request.source);
  const cl_mem destination = call.session.get<cl_mem>(request.destination);
  const BufferBox& from = request.source_box;
  const BufferBox& to = request.destination_box;
  if (!from.valid() || !to.valid()) throw ClError{CL_INVALID_VALUE};
  cl_event event = nullptr;
  check(clEnqueueCopyBufferRect(enqueue.queue, source, destination, sizes(from.origin), sizes(to.origin),
                                sizes(from.region), from.row_pitch, from.slice_pitch, to.row_pitch, to.slice_pitch,
                                enqueue.wait_count(), enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

}  // namespace hivecl::proxy
