// Helpers shared by libhivecl's entry points.
#pragma once

#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "cl_error.hpp"
#include "icd/cluster.hpp"
#include "icd/objects.hpp"

namespace hivecl::icd {

// Runs an entry point's body: a ClError or a failed allocation becomes the returned
// status; nothing ever unwinds into the C caller.
template <class Body>
cl_int guarded(Body&& body) noexcept {
  try {
    body();
    return CL_SUCCESS;
  } catch (const ClError& error) {
    return error.code;
  } catch (const std::bad_alloc&) {
    return CL_OUT_OF_HOST_MEMORY;
  } catch (...) {
    return CL_OUT_OF_RESOURCES;
  }
}

// The same for entry points that return an object and report through errcode_ret.
template <class Body>
auto guarded_create(cl_int* errcode_ret, Body&& body) noexcept -> decltype(body()) {
  decltype(body()) result = nullptr;
  const cl_int status = guarded([&] { result = body(); });
  if (errcode_ret) *errcode_ret = status;
  return status == CL_SUCCESS ? result : nullptr;
}

// The output arguments of a clGet*Info call, filled as the specification says.
class InfoReply {
 public:
  InfoReply(size_t size, void* value, size_t* size_ret) : size_(size), value_(value), size_ret_(size_ret) {}

  void bytes(const void* data, size_t size) {
    if (value_) {
      if (size_ < size) throw ClError{CL_INVALID_VALUE};
      if (size) std::memcpy(value_, data, size);
    }
    if (size_ret_) *size_ret_ = size;
  }
  template <class T>
  void scalar(const T& value) {
    bytes(&value, sizeof value);
  }
  template <class T>
  void list(const std::vector<T>& values) {
    bytes(values.data(), values.size() * sizeof(T));
  }
  void string(std::string_view text) {
    std::vector<char> terminated(text.begin(), text.end());
    terminated.push_back('\0');
    list(terminated);
  }

 private:
  size_t size_;
  void* value_;
  size_t* size_ret_;
};

// A scalar from the bytes of an answer (as many as it has, up to the scalar's size).
template <class T>
T scalar_from(const std::vector<std::byte>& bytes) {
  T value{};
  std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof value));
  return value;
}

// A scalar the device answers as HiveCL reports it; 0 where it has none.
template <class T>
T device_value(cl_device_id device, cl_device_info param) {
  const auto found = device->info.find(param);
  return found != device->info.end() && found->second.error == CL_SUCCESS ? scalar_from<T>(found->second.value) : T{};
}

// The platform's devices of `type`, as clGetDeviceIDs lists them (ClError when none).
std::vector<cl_device_id> devices_of_type(cl_device_type type);
// A hold on a device by a context or sub-device, or the application's reference (clRetainDevice),
// and its end: a sub-device goes with the last (root devices stay).
void hold_device(cl_device_id device);
void drop_device(cl_device_id device);

// Answers a query from the proxy's native object.
void remote_info(Connection* connection, protocol::InfoFamily family, protocol::ObjectId object, cl_uint param,
                 InfoReply& reply, protocol::ObjectId device = protocol::no_object, cl_uint arg_index = 0);

// Spanning contexts: an event of HiveCL's own on a connection that commands there wait for (a
// user event standing for a command of another part, a move's landing), released there once its
// last holder lets it go.
struct OwnEvent {
  OwnEvent(Connection* connection, protocol::ObjectId id) : connection(connection), id(id) {}
  OwnEvent(const OwnEvent&) = delete;
  OwnEvent& operator=(const OwnEvent&) = delete;
  ~OwnEvent();
  Connection* const connection;
  const protocol::ObjectId id;
};

// What a WatchEvent answered: the execution status the event reached, or the call's failure
// (negative; the proxy's loss among them).
inline cl_int watched_status(cl_int status, const protocol::WatchEvent::Reply& reply) {
  return status == CL_SUCCESS ? reply.execution_status : status;
}

// The remote ids on `connection` of an event wait list, checked as every enqueue must: the list
// and its count agree, each event is live, and all belong to `context`. In a spanning context,
// a command of the list on another connection is stood for by a user event there (a relay),
// added to `relays`.
std::vector<protocol::ObjectId> wait_list_ids(const _cl_context* context, cl_uint count, const cl_event* events,
                                              Connection* connection,
                                              std::vector<std::shared_ptr<OwnEvent>>& relays);

// The common part of every enqueue: the command's position in its queue, and the event
// the application asked for (or none), created once the proxy accepted the command.
class EnqueuedCommand {
 public:
  EnqueuedCommand(cl_command_queue queue, cl_uint wait_count, const cl_event* wait_events, cl_event* event_out);
  EnqueuedCommand(const EnqueuedCommand&) = delete;
  EnqueuedCommand& operator=(const EnqueuedCommand&) = delete;
  // The command was sent (or failed): it no longer holds HiveCL's events it waits for.
  ~EnqueuedCommand();
  _cl_command_queue* queue() const { return queue_; }
  Connection* connection() const { return queue_->connection; }
  protocol::EnqueueTail tail() const { return {wait_ids_, event_id_}; }
  uint64_t position() const { return position_; }
  // Spanning contexts: the command also waits for `event` (data brought to its connection),
  // held until the command was sent.
  void wait_also(std::shared_ptr<OwnEvent> event) {
    wait_ids_.push_back(event->id);
    own_events_.push_back(std::move(event));
  }
  // Publishes the event (if asked for) after the proxy accepted the command.
  _cl_event* complete(cl_command_type type, std::shared_ptr<Incoming> incoming = nullptr);
  // A blocking command's wait saw it end: on an in-order queue, so have the commands before it
  // if they were all sent before it.
  void ended();

 private:
  _cl_command_queue* queue_;
  std::vector<std::shared_ptr<OwnEvent>> own_events_;  // before wait_ids_, which wait_list_ids adds relays to
  std::vector<protocol::ObjectId> wait_ids_;
  cl_event* event_out_;
  protocol::ObjectId event_id_ = protocol::no_object;
  uint64_t position_ = 0;
  bool follows_all_sent_ = false;  // every command before it had been sent when it was made
};

// --- memory objects (memory.cpp), shared with images (image.cpp) and spanning contexts ---

inline constexpr cl_mem_flags access_flags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
inline constexpr cl_mem_flags host_access_flags = CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;

// Memory flags checked against the host pointer, as clCreateBuffer and clCreateImage must.
void check_mem_flags(cl_mem_flags flags, const void* host_ptr);
// The flags of an object made from another (a sub-buffer, an image from a buffer): what it asks
// for, checked against the other's (CL_INVALID_VALUE), and what it inherits.
cl_mem_flags derived_flags(cl_mem_flags parent, cl_mem_flags flags);
// CL_INVALID_OPERATION when the host may not read (or write) the object.
void check_host_access(const _cl_mem* mem, bool reads, bool writes);
void check_map_flags(const _cl_mem* mem, cl_map_flags map_flags);
// The application's memory as the proxy names it on the memory data path (0: the data moves over MPI).
uint64_t host_address(const Connection* connection, const void* pointer);
// Host memory of a transfer as the proxy (or in-process, the executors) finds it: in one of the
// connection's shared segments, which the native runtime moves to and from itself, or else by
// its address (host_address).
struct NamedHostMemory {
  protocol::SharedRange shared;
  uint64_t address = 0;
};
NamedHostMemory name_host_memory(const Connection* connection, const void* pointer, size_t size);
// The memory object of an enqueue: live and of the queue's context.
_cl_mem* transfer_mem(const EnqueuedCommand& command, cl_mem mem);
// The largest buffer a device of `context` allows (CL_DEVICE_MAX_MEM_ALLOC_SIZE).
cl_ulong max_alloc_size(const _cl_context* context);
// A buffer's region into host memory (clEnqueueReadBuffer and the reads of maps and SVM copies),
// as a command of `type`.
void read_into(EnqueuedCommand& command, const _cl_mem* mem, size_t offset, size_t size, void* pointer,
               bool blocking, cl_command_type type);
// Whose memory a write reads: the application's, or HiveCL's own (a mapping's shadow, which
// may be freed once the call returns).
enum class HostMemory { application, hivecl };
// Host memory into a buffer's region (clEnqueueWriteBuffer, unmaps, SVM copies).
void write_from(EnqueuedCommand& command, const _cl_mem* mem, size_t offset, size_t size, const void* pointer,
                bool blocking, cl_command_type type, HostMemory memory = HostMemory::application);
// Maps a buffer's region (its arguments checked by the caller) and records the mapping for its unmap.
void* map_buffer(EnqueuedCommand& command, _cl_mem* mem, bool blocking, cl_map_flags flags, size_t offset,
                 size_t size, cl_command_type type);
// Ends the mapping of `mem` at `mapped_ptr` (CL_INVALID_VALUE if there is none), writing back
// what it may have changed.
void unmap(EnqueuedCommand& command, _cl_mem* mem, void* mapped_ptr, cl_command_type type);
void copy_buffer(EnqueuedCommand& command, const _cl_mem* source, const _cl_mem* destination, size_t source_offset,
                 size_t destination_offset, size_t size, cl_command_type type);
// Checks the pattern as clEnqueueFillBuffer must (the device checks the range).
void fill_buffer(EnqueuedCommand& command, const _cl_mem* mem, const void* pattern, size_t pattern_size,
                 size_t offset, size_t size, cl_command_type type);
// In-process, a command that the native runtime makes on the application's memory itself, as
// natively: a rectangular or image transfer (protocol::InPlace), or a map (MapBuffer,
// MapImage). A non-blocking one returns at once (a transfer answered only if it fails), a
// blocking one once the command has ended (its status). Returns the reply.
template <class M>
typename M::Reply enqueue_in_process(EnqueuedCommand& command, const typename M::Request& request, bool blocking,
                                     cl_command_type type) {
  Connection* connection = command.connection();
  if (!blocking) {
    typename M::Reply reply;
    if (protocol::answered_only_on_failure<M>(request, true)) {
      connection->send_detached<M>(request);
    } else {
      reply = connection->call<M>(request);
    }
    command.complete(type);
    return reply;
  }
  typename M::Reply reply;
  const cl_int status = connection->call_blocking_transfer<M>(request, &reply);
  command.complete(type);
  check(status);
  command.ended();
  return reply;
}
// In-process, outside spanning contexts, memory objects are the native runtime's as natively: it
// maps them itself (MapBuffer, MapImage) and uses their CL_MEM_USE_HOST_PTR memory. Elsewhere a
// mapping is memory of HiveCL's own (or host_ptr), read at the map and written back at the
// unmap, and the proxy keeps a copy of host_ptr's data.
inline bool native_host_memory(const _cl_context* context) {
  return !context->spans() && context->connection->in_process();
}

// --- images (image.cpp) and samplers (sampler.cpp) ---

// clEnqueueUnmapMemObject of an image: writes the region back unless it was mapped for reading.
void unmap_image(EnqueuedCommand& command, _cl_mem* image, const _cl_mem::Mapping& mapping);
// Whether a device of `context` supports images.
bool supports_images(const _cl_context* context);
// Spanning contexts (spanning.cpp): the creation of `image` as `id` on `connection`, in its
// context's part there, with `flags` and no data.
protocol::CreateImage::Request image_creation(const _cl_mem& image, const Connection* connection, protocol::ObjectId id,
                                              cl_mem_flags flags);
// Spanning contexts: the whole of `image` read from `source` and written on `target` through
// this process, in pieces of whole slices, rows or pixels of about `piece_bytes`, with queues of
// HiveCL's own; the target's proxy (or in-process, its device) holds it once this returns.
void move_image(const _cl_mem* image, Connection* source, protocol::ObjectId source_queue, Connection* target,
                protocol::ObjectId target_queue, size_t piece_bytes);
// The handle in the value of an image or sampler argument, with the specification's errors
// for its size and for a NULL value.
template <class Handle>
Handle arg_handle(const protocol::KernelArg& base, const void* value) {
  if (base.size != sizeof(Handle)) throw ClError{CL_INVALID_ARG_SIZE};
  if (!value) throw ClError{CL_INVALID_ARG_VALUE};
  Handle handle = nullptr;
  std::memcpy(&handle, value, sizeof handle);
  return handle;
}
// clSetKernelArg of an image or sampler argument, recorded for the next launch.
protocol::KernelArg image_arg(const _cl_kernel* kernel, const protocol::KernelArg& base, const void* value);
protocol::KernelArg sampler_arg(const _cl_kernel* kernel, const protocol::KernelArg& base, const void* value);

// Enqueues a marker (or barrier) for `command`: the device side of commands that need no
// device work, with their own command type.
void enqueue_marker(EnqueuedCommand& command, cl_command_type type, bool barrier);

}  // namespace hivecl::icd
