// Memory-object family on the client side: buffers, their transfers and mappings.
#include <CL/cl.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "icd/api.hpp"
#include "icd/spanning.hpp"
#include "icd/svm.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace hivecl::icd {

namespace {

constexpr cl_mem_flags known_buffer_flags =
    access_flags | host_access_flags | CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;

bool at_most_one(cl_mem_flags flags, cl_mem_flags group) { return std::popcount(flags & group) <= 1; }

}  // namespace

void check_mem_flags(cl_mem_flags flags, const void* host_ptr) {
  if ((flags & ~known_buffer_flags) || !at_most_one(flags, access_flags) || !at_most_one(flags, host_access_flags) ||
      ((flags & CL_MEM_USE_HOST_PTR) && (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR))))
    throw ClError{CL_INVALID_VALUE};
  const bool needs_host_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  if (needs_host_ptr != (host_ptr != nullptr)) throw ClError{CL_INVALID_HOST_PTR};
}

void check_host_access(const _cl_mem* mem, bool reads, bool writes) {
  cl_mem_flags host_access = mem->flags & host_access_flags;
  // An image made from a buffer that asks none has the buffer's (clCreateImage).
  if (!host_access && mem->image_buffer) host_access = mem->image_buffer->flags & host_access_flags;
  if ((reads && (host_access & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
      (writes && (host_access & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS))))
    throw ClError{CL_INVALID_OPERATION};
}

void check_map_flags(const _cl_mem* mem, cl_map_flags map_flags) {
  constexpr cl_map_flags known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
  const bool invalidates = map_flags & CL_MAP_WRITE_INVALIDATE_REGION;
  if ((map_flags & ~known) || (invalidates && (map_flags & (CL_MAP_READ | CL_MAP_WRITE))))
    throw ClError{CL_INVALID_VALUE};
  check_host_access(mem, map_flags & CL_MAP_READ, map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION));
}

uint64_t host_address(const Connection* connection, const void* pointer) {
  return connection->moves_by_memory() ? reinterpret_cast<uint64_t>(pointer) : 0;
}

NamedHostMemory name_host_memory(const Connection* connection, const void* pointer, size_t size) {
  if (connection->in_process()) return {.address = host_address(connection, pointer)};  // no segment to look up
  const SharedRange shared = shared_range(connection, pointer, size);
  return {.shared = shared, .address = shared.segment ? 0 : host_address(connection, pointer)};
}

_cl_mem* transfer_mem(const EnqueuedCommand& command, cl_mem mem) {
  _cl_mem* object = checked(mem);
  if (object->context.get() != command.queue()->context.get()) throw ClError{CL_INVALID_CONTEXT};
  return object;
}

cl_ulong max_alloc_size(const _cl_context* context) {
  cl_ulong largest = 0;
  for (cl_device_id device : context->devices)
    largest = std::max(largest, device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  return largest;
}

cl_mem_flags derived_flags(cl_mem_flags parent, cl_mem_flags flags) {
  constexpr cl_mem_flags host_pointer_flags = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;
  const auto conflicts = [&](cl_mem_flags in_parent, cl_mem_flags refused) {
    return (parent & in_parent) && (flags & refused);
  };
  if ((flags & ~(access_flags | host_access_flags)) || !at_most_one(flags, access_flags) ||
      !at_most_one(flags, host_access_flags) ||
      conflicts(CL_MEM_WRITE_ONLY, CL_MEM_READ_WRITE | CL_MEM_READ_ONLY) ||
      conflicts(CL_MEM_READ_ONLY, CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY) ||
      conflicts(CL_MEM_HOST_WRITE_ONLY, CL_MEM_HOST_READ_ONLY) ||
      conflicts(CL_MEM_HOST_READ_ONLY, CL_MEM_HOST_WRITE_ONLY) ||
      conflicts(CL_MEM_HOST_NO_ACCESS, CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY))
    throw ClError{CL_INVALID_VALUE};
  cl_mem_flags inherited = parent & host_pointer_flags;
  if (!(flags & access_flags)) inherited |= parent & access_flags;
  if (!(flags & host_access_flags)) inherited |= parent & host_access_flags;
  return flags | inherited;
}

}  // namespace hivecl::icd

namespace {

cl_mem create_buffer(cl_context context, const cl_mem_properties* properties, cl_mem_flags flags, size_t size,
                     void* host_ptr) {
  checked(context);
  // OpenCL 3.0 defines no buffer property; extensions that do are not forwarded.
  if (properties && *properties != 0) throw ClError{CL_INVALID_PROPERTY};
  check_mem_flags(flags, host_ptr);
  if (size == 0 || size > max_alloc_size(context)) throw ClError{CL_INVALID_BUFFER_SIZE};
  auto mem = std::make_unique<_cl_mem>();
  mem->connection = context->connection;
  mem->id = context->connection->new_id();
  mem->context = Ref<_cl_context>(context);
  mem->flags = flags;
  mem->size = size;
  if (flags & CL_MEM_USE_HOST_PTR) mem->host_ptr = host_ptr;
  if (properties) mem->properties = {0};
  if (context->spans()) mem->spread = new_spread(context, size, host_ptr != nullptr);
  // Memory of an SVM allocation is the allocation's, as natively (in-process it is the runtime's
  // own; through a proxy the buffer is made over the allocation there).
  const std::optional<SvmRegion> svm =
      (flags & CL_MEM_USE_HOST_PTR) && !context->spans() ? find_svm(context, host_ptr) : std::nullopt;
  if (svm && size > svm->room) throw ClError{CL_INVALID_BUFFER_SIZE};
  mem->uses_svm_pointer = svm.has_value();
  // Except where the native runtime uses it itself (native_host_memory), the proxy keeps its own
  // copy of a CL_MEM_USE_HOST_PTR buffer; mappings bring host_ptr up to date. Host access flags
  // are enforced here: the proxy must read and write the buffer for any mapping.
  const bool uses_natively = (flags & CL_MEM_USE_HOST_PTR) && native_host_memory(context);
  cl_mem_flags wire_flags = flags & ~host_access_flags;
  if ((flags & CL_MEM_USE_HOST_PTR) && !uses_natively)
    wire_flags = (wire_flags & ~CL_MEM_USE_HOST_PTR) | CL_MEM_COPY_HOST_PTR;
  // The initial contents are named by address where the proxy reads them itself (the memory data
  // path) or the native runtime uses them (in-process, CL_MEM_USE_HOST_PTR); otherwise they are
  // the request's data, read in place in-process and sent over MPI.
  Connection* const connection = context->connection;
  if (mem->uses_svm_pointer && !uses_natively) {
    connection->call<CreateBuffer>({.id = mem->id, .context = context->id, .flags = flags & ~host_access_flags,
                                    .size = size, .svm = {.allocation = svm->buffer->id, .offset = svm->offset}});
    return publish(mem.release());
  }
  const bool proxy_reads = uses_natively || (host_ptr && connection->data_path() == transport::DataPath::memory);
  const std::span<const std::byte> initial_data(static_cast<const std::byte*>(host_ptr),
                                                host_ptr && !proxy_reads ? size : 0);
  connection->call<CreateBuffer>({.id = mem->id, .context = context->id, .flags = wire_flags, .size = size,
                                  .with_data = host_ptr != nullptr,
                                  .host_address = proxy_reads ? reinterpret_cast<uint64_t>(host_ptr) : 0},
                                 initial_data);
  return publish(mem.release());
}

cl_mem create_sub_buffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type, const void* info) {
  _cl_mem* parent = checked(buffer);
  if (parent->parent) throw ClError{CL_INVALID_MEM_OBJECT};
  const cl_mem_flags effective = derived_flags(parent->flags, flags);
  if (type != CL_BUFFER_CREATE_TYPE_REGION || !info) throw ClError{CL_INVALID_VALUE};
  cl_buffer_region region{};
  std::memcpy(&region, info, sizeof region);
  if (region.origin > parent->size || region.size > parent->size - region.origin) throw ClError{CL_INVALID_VALUE};
  if (region.size == 0) throw ClError{CL_INVALID_BUFFER_SIZE};
  // The origin's alignment is the native runtime's to judge: NVIDIA accepts origins below its
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN (piglit's clGetMemObjectInfo test), PoCL refuses them.
  auto mem = std::make_unique<_cl_mem>();
  mem->connection = parent->connection;
  mem->id = parent->connection->new_id();
  mem->context = parent->context;
  mem->parent = Ref<_cl_mem>(parent);
  mem->origin = region.origin;
  mem->flags = effective;
  mem->size = region.size;
  if (parent->host_ptr) mem->host_ptr = static_cast<std::byte*>(parent->host_ptr) + region.origin;
  mem->uses_svm_pointer = parent->uses_svm_pointer;
  parent->connection->call<CreateSubBuffer>(
      {.id = mem->id, .parent = parent->id, .flags = flags & access_flags, .origin = region.origin, .size = region.size});
  return publish(mem.release());
}

// The buffer argument of a transfer: a live buffer (not an image) of the queue's context.
_cl_mem* transfer_buffer(const EnqueuedCommand& command, cl_mem buffer) {
  _cl_mem* mem = transfer_mem(command, buffer);
  if (mem->image) throw ClError{CL_INVALID_MEM_OBJECT};
  return mem;
}

// A range of size 0 is in bounds: only mappings must not be empty.
void check_range(const _cl_mem* mem, size_t offset, size_t size) {
  if (offset > mem->size || size > mem->size - offset) throw ClError{CL_INVALID_VALUE};
}

// The buffer of a clEnqueueReadBuffer (`reads`) or clEnqueueWriteBuffer, with its arguments checked.
const _cl_mem* host_transfer_buffer(const EnqueuedCommand& command, cl_mem buffer, size_t offset, size_t size,
                                    const void* ptr, bool reads) {
  const _cl_mem* mem = transfer_buffer(command, buffer);
  if (!ptr) throw ClError{CL_INVALID_VALUE};
  check_range(mem, offset, size);
  check_host_access(mem, reads, !reads);
  return mem;
}

}  // namespace

namespace hivecl::icd {

// Device data into host memory: the reply confirms the command, the data follows it
// (over MPI, or written by the proxy itself on the memory path), then its status.
// On the memory path a non-blocking read is not waited for (detached: answered only if it
// fails); its status still tells when the data is there.
// In-process the native runtime writes the application's memory itself, and only a blocking
// read has a status (the native event tells the rest); a non-blocking one is answered only if
// it fails, before the call returns.
void read_into(EnqueuedCommand& command, const _cl_mem* mem, size_t offset, size_t size, void* pointer,
               bool blocking, cl_command_type type) {
  Connection* connection = command.connection();
  const NamedHostMemory host = name_host_memory(connection, pointer, size);
  const ObjectId id = use_mem(mem, command, Access::reads, offset, size);
  const ReadBuffer::Request request{.queue = command.queue()->id, .mem = id, .offset = offset, .size = size,
                                    .tail = command.tail(), .host_address = host.address, .shared = host.shared,
                                    .blocking = blocking,
                                    .detached = !blocking && connection->moves_by_memory()};
  if (connection->in_process() && !blocking) {
    connection->send_detached<ReadBuffer>(request);
    command.complete(type);
    return;
  }
  if (connection->in_process()) {
    const cl_int status = connection->call_blocking_transfer<ReadBuffer>(request);
    command.complete(type);
    check(status);
    if (answered_after_end<ReadBuffer>(request, true)) command.ended();
    return;
  }
  uint64_t sequence = 0;
  if (request.detached) {
    sequence = connection->send_detached<ReadBuffer>(request);
  } else {
    connection->call<ReadBuffer>(request, {}, &sequence);
  }
  auto incoming = connection->receive(sequence, pointer, size);
  command.queue()->add_pending({incoming, command.position(), HostRange::of(pointer, size)});
  command.complete(type, incoming);
  if (blocking) {
    command.queue()->settle(command.position());
    check(incoming->wait());
    if (answered_after_end<ReadBuffer>(request, false)) command.ended();
  }
}

// Host memory to the device. A blocking write, or one from HiveCL's own memory (an unmap's,
// which a release may free at once), returns once the proxy holds the data (in its staging
// ring, or on the device). A non-blocking write from the application's memory returns at
// once: the spec lets the application reuse that memory only after the write's event
// completed, and a failure reaches that event.
// The data is taken now, not when the command runs: the reads it may depend on (earlier on
// the queue, or in its wait list) must have filled the application's memory first.
// From a shared segment (through a proxy of this node) or in-process the native runtime reads
// `pointer` itself, as natively: a non-blocking write returns at once and reports nothing but
// a failure (in-process before it returns); in-process a blocking one returns when the command
// has ended (its status).
void write_from(EnqueuedCommand& command, const _cl_mem* mem, size_t offset, size_t size, const void* pointer,
                bool blocking, cl_command_type type, HostMemory memory) {
  Connection* connection = command.connection();
  // The reads before it that fill this memory must have filled it (their failures are theirs).
  if (!connection->in_process()) command.queue()->settle(command.position(), HostRange::of(pointer, size));
  const NamedHostMemory host = name_host_memory(connection, pointer, size);
  const std::span<const std::byte> bulk(static_cast<const std::byte*>(pointer),
                                        host.address || host.shared.segment ? 0 : size);
  const ObjectId id = use_mem(mem, command, Access::writes, offset, size);
  WriteBuffer::Request request{.queue = command.queue()->id, .mem = id, .offset = offset, .size = size,
                               .tail = command.tail(), .host_address = host.address, .shared = host.shared,
                               .blocking = blocking, .transient = memory == HostMemory::hivecl};
  if (!blocking && memory == HostMemory::application) {
    request.detached = true;
    if (answered_only_on_failure<WriteBuffer>(request, connection->in_process())) {
      connection->send_detached<WriteBuffer>(request);
      command.complete(type);
      return;
    }
    connection->call_later<WriteBuffer>(request, [](cl_int status, const WriteBuffer::Reply&) {
      if (status != CL_SUCCESS)
        log::warn("a write failed on the proxy after clEnqueueWriteBuffer had returned (status ", status,
                  "); its event reports the failure");
    }, bulk);
    command.complete(type);
    return;
  }
  if (connection->in_process() && blocking) {
    const cl_int status = connection->call_blocking_transfer<WriteBuffer>(request);
    command.complete(type);
    check(status);
    if (answered_after_end<WriteBuffer>(request, true)) command.ended();
    return;
  }
  connection->call<WriteBuffer>(request, bulk);
  command.complete(type);
  if (answered_after_end<WriteBuffer>(request, false)) command.ended();
}

}  // namespace hivecl::icd

namespace {

// --- rectangular transfers ---

// A row pitch and slice pitch as a rectangle uses them: 0 means packed; others are checked.
std::pair<size_t, size_t> rect_pitches(const size_t* region, size_t row_pitch, size_t slice_pitch) {
  if (row_pitch == 0) row_pitch = region[0];
  if (row_pitch < region[0]) throw ClError{CL_INVALID_VALUE};
  size_t least_slice = 0;
  if (__builtin_mul_overflow(region[1], row_pitch, &least_slice)) throw ClError{CL_INVALID_VALUE};
  if (slice_pitch == 0) slice_pitch = least_slice;
  if (slice_pitch < least_slice || slice_pitch % row_pitch != 0) throw ClError{CL_INVALID_VALUE};
  return {row_pitch, slice_pitch};
}

// One past the last byte a box reaches; ClError(CL_INVALID_VALUE) past the end of size_t.
size_t box_end(const size_t* origin, const size_t* region, size_t row_pitch, size_t slice_pitch) {
  size_t slices = 0, rows = 0, end = 0;
  if (__builtin_add_overflow(origin[2], region[2] - 1, &slices) ||
      __builtin_mul_overflow(slices, slice_pitch, &slices) || __builtin_add_overflow(origin[1], region[1] - 1, &rows) ||
      __builtin_mul_overflow(rows, row_pitch, &rows) || __builtin_add_overflow(slices, rows, &end) ||
      __builtin_add_overflow(end, origin[0], &end) || __builtin_add_overflow(end, region[0], &end))
    throw ClError{CL_INVALID_VALUE};
  return end;
}

// The first byte of a box in its buffer, and the bytes from there to its last (spanning.hpp).
size_t box_begin(const BufferBox& box) {
  return box.origin[2] * box.slice_pitch + box.origin[1] * box.row_pitch + box.origin[0];
}
size_t box_span(const BufferBox& box) {
  const size_t origin[3] = {box.origin[0], box.origin[1], box.origin[2]};
  const size_t region[3] = {box.region[0], box.region[1], box.region[2]};
  return box_end(origin, region, box.row_pitch, box.slice_pitch) - box_begin(box);
}

void check_region(const size_t* origin, const size_t* region) {
  if (!origin || !region || region[0] == 0 || region[1] == 0 || region[2] == 0) throw ClError{CL_INVALID_VALUE};
}

// The buffer side of a rectangular transfer, inside the buffer.
BufferBox buffer_box(const _cl_mem* mem, const size_t* origin, const size_t* region, size_t row_pitch,
                     size_t slice_pitch) {
  check_region(origin, region);
  const auto [row, slice] = rect_pitches(region, row_pitch, slice_pitch);
  if (box_end(origin, region, row, slice) > mem->size) throw ClError{CL_INVALID_VALUE};
  return {.origin = {origin[0], origin[1], origin[2]}, .region = {region[0], region[1], region[2]},
          .row_pitch = row, .slice_pitch = slice};
}

// The application's side of a rectangular transfer: its memory, box and pitches.
struct HostBox {
  std::byte* base;
  size_t origin[3];
  size_t region[3];
  size_t row_pitch;
  size_t slice_pitch;

  size_t packed_bytes() const { return region[0] * region[1] * region[2]; }
  std::byte* first() const { return base + origin[2] * slice_pitch + origin[1] * row_pitch + origin[0]; }
  // In-process and on the memory data path the rows stay where they are: `request` names them
  // with their pitches (InPlace; `blocking` counts in-process only), in-process by address,
  // through a proxy as name_host_memory finds them. Whether it does.
  template <class Request>
  bool place(Request& request, const Connection* connection, bool blocking) const {
    if (!connection->moves_by_memory()) return false;
    if (connection->in_process()) {
      request.host_address = reinterpret_cast<uint64_t>(first());
    } else {
      const HostRange spanned = span();
      const NamedHostMemory host = name_host_memory(connection, first(), spanned.end - spanned.begin);
      request.shared = host.shared;
      request.host_address = host.address;
    }
    request.in_place = {.used = true, .row_pitch = row_pitch, .slice_pitch = slice_pitch,
                        .blocking = blocking && connection->in_process()};
    return true;
  }
  // The memory the box spans, from its first byte to its last.
  HostRange span() const {
    const auto at = [&](size_t x, size_t y, size_t z) {
      return reinterpret_cast<uintptr_t>(base) + z * slice_pitch + y * row_pitch + x;
    };
    return {at(origin[0], origin[1], origin[2]),
            at(origin[0] + region[0], origin[1] + region[1] - 1, origin[2] + region[2] - 1)};
  }
  // Calls `row(host_row, packed_row)` for every row of the box.
  template <class Row>
  void for_each_row(std::byte* packed, Row row) const {
    for (size_t z = 0; z < region[2]; ++z)
      for (size_t y = 0; y < region[1]; ++y)
        row(base + (origin[2] + z) * slice_pitch + (origin[1] + y) * row_pitch + origin[0],
            packed + (z * region[1] + y) * region[0]);
  }
};

HostBox host_box(void* ptr, const size_t* origin, const size_t* region, size_t row_pitch, size_t slice_pitch) {
  check_region(origin, region);
  if (!ptr) throw ClError{CL_INVALID_VALUE};
  const auto [row, slice] = rect_pitches(region, row_pitch, slice_pitch);
  box_end(origin, region, row, slice);
  return {static_cast<std::byte*>(ptr), {origin[0], origin[1], origin[2]}, {region[0], region[1], region[2]}, row,
          slice};
}

// The application's rows stay where they are in-process, where the native runtime reads or
// writes them itself, and on the memory data path, where the proxy gathers or scatters them
// itself. Over MPI the data travels packed: the host pitches are applied here, and a read
// unpacks it once it has arrived, before the application can see the command complete.
void read_rect_into(EnqueuedCommand& command, const _cl_mem* mem, const BufferBox& box, const HostBox& host,
                    bool blocking) {
  Connection* connection = command.connection();
  const ObjectId id = use_mem(mem, command, Access::reads, box_begin(box), box_span(box));
  ReadBufferRect::Request request{.queue = command.queue()->id, .mem = id, .box = box, .tail = command.tail()};
  const bool in_place = host.place(request, connection, blocking);
  if (connection->in_process()) {
    enqueue_in_process<ReadBufferRect>(command, request, request.in_place.blocking, CL_COMMAND_READ_BUFFER_RECT);
    return;
  }
  auto packed = in_place ? nullptr : std::make_shared<std::vector<std::byte>>(host.packed_bytes());
  uint64_t sequence = 0;
  connection->call<ReadBufferRect>(request, {}, &sequence);
  auto incoming = connection->receive(sequence, in_place ? host.first() : packed->data(), host.packed_bytes());
  if (packed)
    incoming->finish_with([packed, host] {
      host.for_each_row(packed->data(), [&](std::byte* row, const std::byte* from) {
        std::memcpy(row, from, host.region[0]);
      });
    });
  command.queue()->add_pending({incoming, command.position(), host.span()});
  command.complete(CL_COMMAND_READ_BUFFER_RECT, incoming);
  if (blocking) {
    command.queue()->settle(command.position());
    check(incoming->wait());
  }
}

void write_rect_from(EnqueuedCommand& command, const _cl_mem* mem, const BufferBox& box, const HostBox& host,
                     bool blocking) {
  Connection* connection = command.connection();
  // The rows of the box are written, the bytes between them kept: all of its span must be here.
  const ObjectId id = use_mem(mem, command, Access::reads_writes, box_begin(box), box_span(box));
  WriteBufferRect::Request request{.queue = command.queue()->id, .mem = id, .box = box, .tail = command.tail()};
  const bool in_place = host.place(request, connection, blocking);
  if (connection->in_process()) {
    enqueue_in_process<WriteBufferRect>(command, request, request.in_place.blocking, CL_COMMAND_WRITE_BUFFER_RECT);
    return;
  }
  command.queue()->settle(command.position(), host.span());  // the reads that fill this memory, as for a write
  std::vector<std::byte> packed;
  if (!in_place) {
    packed.resize(host.packed_bytes());
    host.for_each_row(packed.data(), [&](const std::byte* row, std::byte* to) { std::memcpy(to, row, host.region[0]); });
  }
  connection->call<WriteBufferRect>(request, packed);
  command.complete(CL_COMMAND_WRITE_BUFFER_RECT);
}

std::byte* mapping_base(_cl_mem* mem) {
  if (mem->host_ptr) return static_cast<std::byte*>(mem->host_ptr);
  std::lock_guard lock(mem->mapping_mutex);
  if (!mem->shadow && !mem->shared_shadow) mem->shared_shadow = SharedShadow::create(mem->connection, mem->size);
  if (mem->shared_shadow) return mem->shared_shadow->data();
  if (!mem->shadow) mem->shadow.reset(new std::byte[mem->size]);
  return mem->shadow.get();
}

// A mapping in memory of HiveCL's own (or host_ptr): a region mapped for writing is fetched too
// (only part of it may be written); one mapped with CL_MAP_WRITE_INVALIDATE_REGION is not.
std::byte* map_shadow(EnqueuedCommand& command, _cl_mem* mem, bool blocking, cl_map_flags flags, size_t offset,
                      size_t size, cl_command_type type) {
  std::byte* pointer = mapping_base(mem) + offset;
  if (flags & CL_MAP_WRITE_INVALIDATE_REGION) {
    enqueue_marker(command, type, false);
  } else {
    read_into(command, mem, offset, size, pointer, blocking, type);
  }
  return pointer;
}

std::byte* map_natively(EnqueuedCommand& command, const _cl_mem* mem, bool blocking, cl_map_flags flags,
                        size_t offset, size_t size, cl_command_type type) {
  const MapBuffer::Reply reply = enqueue_in_process<MapBuffer>(
      command,
      {.queue = command.queue()->id, .mem = mem->id, .flags = flags, .offset = offset, .size = size,
       .blocking = blocking, .tail = command.tail()},
      blocking, type);
  return reinterpret_cast<std::byte*>(reply.address);
}

}  // namespace

namespace hivecl::icd {

void* map_buffer(EnqueuedCommand& command, _cl_mem* mem, bool blocking, cl_map_flags flags, size_t offset,
                 size_t size, cl_command_type type) {
  std::byte* pointer = native_host_memory(mem->context.get())
                           ? map_natively(command, mem, blocking, flags, offset, size, type)
                           : map_shadow(command, mem, blocking, flags, offset, size, type);
  std::lock_guard lock(mem->mapping_mutex);
  mem->mappings.push_back({.pointer = pointer, .offset = offset, .size = size, .flags = flags});
  return pointer;
}

void unmap(EnqueuedCommand& command, _cl_mem* mem, void* mapped_ptr, cl_command_type type) {
  _cl_mem::Mapping mapping{};
  {
    std::lock_guard lock(mem->mapping_mutex);
    const auto it = std::find_if(mem->mappings.begin(), mem->mappings.end(),
                                 [&](const auto& m) { return m.pointer == mapped_ptr; });
    if (it == mem->mappings.end()) throw ClError{CL_INVALID_VALUE};
    mapping = *it;
    mem->mappings.erase(it);
  }
  if (native_host_memory(mem->context.get())) {
    command.connection()->call<UnmapMemObject>({.queue = command.queue()->id, .mem = mem->id,
                                                .address = reinterpret_cast<uint64_t>(mapped_ptr),
                                                .tail = command.tail()});
    command.complete(type);
    return;
  }
  // Mapped with no flags (OpenCL 1.0 programs) counts as mapped for reading and writing.
  if (mem->image) return unmap_image(command, mem, mapping);
  const bool written = mapping.flags == 0 || (mapping.flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION));
  if (written) {
    write_from(command, mem, mapping.offset, mapping.size, mapping.pointer, false, type, HostMemory::hivecl);
  } else {
    enqueue_marker(command, type, false);
  }
}

void copy_buffer(EnqueuedCommand& command, const _cl_mem* source, const _cl_mem* destination, size_t source_offset,
                 size_t destination_offset, size_t size, cl_command_type type) {
  // Ranges and overlap are checked by the device's own implementation.
  const ObjectId source_id = use_mem(source, command, Access::reads, source_offset, size);
  const ObjectId destination_id = use_mem(destination, command, Access::writes, destination_offset, size);
  command.connection()->call<CopyBuffer>({.queue = command.queue()->id, .source = source_id,
                                          .destination = destination_id, .source_offset = source_offset,
                                          .destination_offset = destination_offset, .size = size,
                                          .tail = command.tail()});
  command.complete(type);
}

void fill_buffer(EnqueuedCommand& command, const _cl_mem* mem, const void* pattern, size_t pattern_size,
                 size_t offset, size_t size, cl_command_type type) {
  // Checked here because pattern_size says how much of the application's memory to read.
  if (!pattern || pattern_size == 0 || pattern_size > 128 || !std::has_single_bit(pattern_size))
    throw ClError{CL_INVALID_VALUE};
  const auto* bytes = static_cast<const std::byte*>(pattern);
  const ObjectId id = use_mem(mem, command, Access::writes, offset, size);
  command.connection()->call<FillBuffer>({.queue = command.queue()->id, .mem = id,
                                          .pattern = Bytes(bytes, bytes + pattern_size), .offset = offset,
                                          .size = size, .tail = command.tail()});
  command.complete(type);
}

}  // namespace hivecl::icd

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                               cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] { return create_buffer(context, nullptr, flags, size, host_ptr); });
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateBufferWithProperties(cl_context context, const cl_mem_properties* properties,
                                                             cl_mem_flags flags, size_t size, void* host_ptr,
                                                             cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] { return create_buffer(context, properties, flags, size, host_ptr); });
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
                                                  cl_buffer_create_type buffer_create_type,
                                                  const void* buffer_create_info, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] { return create_sub_buffer(buffer, flags, buffer_create_type, buffer_create_info); });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainMemObject(cl_mem memobj) {
  return guarded([&] { retain(memobj); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem memobj) {
  return guarded([&] { release(memobj); });
}

CL_API_ENTRY cl_int CL_API_CALL clSetMemObjectDestructorCallback(cl_mem memobj,
                                                                 void(CL_CALLBACK* pfn_notify)(cl_mem, void*),
                                                                 void* user_data) {
  return guarded([&] {
    checked(memobj);
    if (!pfn_notify) throw ClError{CL_INVALID_VALUE};
    memobj->destructor_callbacks.add(pfn_notify, user_data);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetMemObjectInfo(cl_mem memobj, cl_mem_info param_name, size_t param_value_size,
                                                   void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(memobj);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_MEM_TYPE:
        return reply.scalar(memobj->image ? memobj->image->desc.image_type : cl_mem_object_type{CL_MEM_OBJECT_BUFFER});
      case CL_MEM_FLAGS: return reply.scalar(memobj->flags);
      case CL_MEM_SIZE:
        if (memobj->image) return remote_info(memobj->connection, InfoFamily::mem_object, memobj->id, param_name, reply);
        return reply.scalar(memobj->size);
      case CL_MEM_HOST_PTR: return reply.scalar(memobj->host_ptr);
      case CL_MEM_MAP_COUNT: {
        std::lock_guard lock(memobj->mapping_mutex);
        return reply.scalar(static_cast<cl_uint>(memobj->mappings.size()));
      }
      case CL_MEM_REFERENCE_COUNT: return reply.scalar(memobj->refs.load());
      case CL_MEM_CONTEXT: return reply.scalar(static_cast<cl_context>(memobj->context.get()));
      case CL_MEM_ASSOCIATED_MEMOBJECT:
        return reply.scalar(static_cast<cl_mem>(memobj->parent ? memobj->parent.get() : memobj->image_buffer.get()));
      case CL_MEM_OFFSET: return reply.scalar(memobj->origin);
      case CL_MEM_USES_SVM_POINTER: return reply.scalar(cl_bool{memobj->uses_svm_pointer});
      case CL_MEM_PROPERTIES: return reply.list(memobj->properties);
      default: throw ClError{CL_INVALID_VALUE};
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                    cl_bool blocking_read, size_t offset, size_t size, void* ptr,
                                                    cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                    cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = host_transfer_buffer(command, buffer, offset, size, ptr, true);
    read_into(command, mem, offset, size, ptr, blocking_read, CL_COMMAND_READ_BUFFER);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                     cl_bool blocking_write,
                                                     size_t offset, size_t size, const void* ptr,
                                                     cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                     cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = host_transfer_buffer(command, buffer, offset, size, ptr, false);
    write_from(command, mem, offset, size, ptr, blocking_write, CL_COMMAND_WRITE_BUFFER);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue command_queue, cl_mem src_buffer,
                                                    cl_mem dst_buffer, size_t src_offset, size_t dst_offset,
                                                    size_t size, cl_uint num_events_in_wait_list,
                                                    const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* source = transfer_buffer(command, src_buffer);
    const _cl_mem* destination = transfer_buffer(command, dst_buffer);
    copy_buffer(command, source, destination, src_offset, dst_offset, size, CL_COMMAND_COPY_BUFFER);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                    const void* pattern, size_t pattern_size, size_t offset,
                                                    size_t size, cl_uint num_events_in_wait_list,
                                                    const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_buffer(command, buffer);
    fill_buffer(command, mem, pattern, pattern_size, offset, size, CL_COMMAND_FILL_BUFFER);
  });
}

CL_API_ENTRY void* CL_API_CALL clEnqueueMapBuffer(cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map,
                                                  cl_map_flags map_flags, size_t offset, size_t size,
                                                  cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                                  cl_event* event, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> void* {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    _cl_mem* mem = transfer_buffer(command, buffer);
    if (size == 0) throw ClError{CL_INVALID_VALUE};
    check_range(mem, offset, size);
    check_map_flags(mem, map_flags);
    return map_buffer(command, mem, blocking_map, map_flags, offset, size, CL_COMMAND_MAP_BUFFER);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueUnmapMemObject(cl_command_queue command_queue, cl_mem memobj,
                                                        void* mapped_ptr, cl_uint num_events_in_wait_list,
                                                        const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    unmap(command, transfer_mem(command, memobj), mapped_ptr, CL_COMMAND_UNMAP_MEM_OBJECT);
  });
}

// A buffer of a context on one connection has nothing to move; in a spanning context, the
// buffers' data moves to the queue's part (spanning.hpp).
CL_API_ENTRY cl_int CL_API_CALL clEnqueueMigrateMemObjects(cl_command_queue command_queue, cl_uint num_mem_objects,
                                                           const cl_mem* mem_objects, cl_mem_migration_flags flags,
                                                           cl_uint num_events_in_wait_list,
                                                           const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    if (num_mem_objects == 0 || !mem_objects) throw ClError{CL_INVALID_VALUE};
    for (cl_uint i = 0; i < num_mem_objects; ++i) transfer_mem(command, mem_objects[i]);
    if (flags & ~cl_mem_migration_flags{CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED})
      throw ClError{CL_INVALID_VALUE};
    const Access access = flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED ? Access::writes : Access::reads;
    if (!(flags & CL_MIGRATE_MEM_OBJECT_HOST))
      for (cl_uint i = 0; i < num_mem_objects; ++i) use_mem(mem_objects[i], command, access);
    enqueue_marker(command, CL_COMMAND_MIGRATE_MEM_OBJECTS, false);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBufferRect(cl_command_queue command_queue, cl_mem buffer,
                                                        cl_bool blocking_read, const size_t* buffer_origin,
                                                        const size_t* host_origin, const size_t* region,
                                                        size_t buffer_row_pitch, size_t buffer_slice_pitch,
                                                        size_t host_row_pitch, size_t host_slice_pitch, void* ptr,
                                                        cl_uint num_events_in_wait_list,
                                                        const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_buffer(command, buffer);
    const BufferBox box = buffer_box(mem, buffer_origin, region, buffer_row_pitch, buffer_slice_pitch);
    const HostBox host = host_box(ptr, host_origin, region, host_row_pitch, host_slice_pitch);
    check_host_access(mem, true, false);
    read_rect_into(command, mem, box, host, blocking_read);
  });
}

// Through a proxy the data is sent before returning, blocking or not.
CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBufferRect(cl_command_queue command_queue, cl_mem buffer,
                                                         cl_bool blocking_write,
                                                         const size_t* buffer_origin, const size_t* host_origin,
                                                         const size_t* region, size_t buffer_row_pitch,
                                                         size_t buffer_slice_pitch, size_t host_row_pitch,
                                                         size_t host_slice_pitch, const void* ptr,
                                                         cl_uint num_events_in_wait_list,
                                                         const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* mem = transfer_buffer(command, buffer);
    const BufferBox box = buffer_box(mem, buffer_origin, region, buffer_row_pitch, buffer_slice_pitch);
    const HostBox host = host_box(const_cast<void*>(ptr), host_origin, region, host_row_pitch, host_slice_pitch);
    check_host_access(mem, false, true);
    write_rect_from(command, mem, box, host, blocking_write);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBufferRect(cl_command_queue command_queue, cl_mem src_buffer,
                                                        cl_mem dst_buffer, const size_t* src_origin,
                                                        const size_t* dst_origin, const size_t* region,
                                                        size_t src_row_pitch, size_t src_slice_pitch,
                                                        size_t dst_row_pitch, size_t dst_slice_pitch,
                                                        cl_uint num_events_in_wait_list,
                                                        const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const _cl_mem* source = transfer_buffer(command, src_buffer);
    const _cl_mem* destination = transfer_buffer(command, dst_buffer);
    const BufferBox from = buffer_box(source, src_origin, region, src_row_pitch, src_slice_pitch);
    const BufferBox to = buffer_box(destination, dst_origin, region, dst_row_pitch, dst_slice_pitch);
    // Overlap within one buffer is checked by the device's own implementation.
    const ObjectId source_id = use_mem(source, command, Access::reads, box_begin(from), box_span(from));
    const ObjectId destination_id =
        use_mem(destination, command, Access::reads_writes, box_begin(to), box_span(to));
    command.connection()->call<CopyBufferRect>({.queue = command.queue()->id, .source = source_id,
                                                .destination = destination_id, .source_box = from,
                                                .destination_box = to, .tail = command.tail()});
    command.complete(CL_COMMAND_COPY_BUFFER_RECT);
  });
}
