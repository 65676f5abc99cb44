// libhivecl's objects. Every handle given to the application points to one of these
// structs, whose first member is the ICD dispatch table (cl_khr_icd), followed by the
// proxy it lives on and its remote id, then what the client caches (immutable info,
// relations to other objects). No struct here may have virtual functions: that would
// put a vtable pointer, not the dispatch table, at offset 0.
#pragma once

#include <CL/cl_icd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cl_error.hpp"
#include "icd/shared_memory.hpp"
#include "protocol/messages.hpp"

namespace hivecl::icd {

class Connection;
class Incoming;

extern const cl_icd_dispatch dispatch_table;

struct IcdObject {
  const cl_icd_dispatch* dispatch = &dispatch_table;
};

// What kind of object a live handle is; the registry answers "is this a live X?".
enum class HandleKind : uint8_t { platform, device, context, command_queue, mem, program, kernel, event, sampler };

void register_handle(const void* handle, HandleKind kind);
void unregister_handle(const void* handle);
bool is_live(const void* handle, HandleKind kind);

// The same object's id on another connection: an object of a context whose devices belong to
// several proxies (or to a proxy and this process) has one remote object on each.
struct Replica {
  Connection* connection = nullptr;
  protocol::ObjectId id = protocol::no_object;
};

// An application-visible object on one proxy. Like native implementations, one reference
// count covers the application's references and the holds of dependent objects (a buffer
// holds its context, a kernel its program, ...): an object the application released stays
// valid, and reachable through its dependents, until the last of them goes.
template <class Self>
struct Shared : IcdObject {
  Connection* connection = nullptr;  // in a context spanning connections: the context's first
  protocol::ObjectId id = protocol::no_object;
  std::atomic<cl_uint> refs{1};
  // Its ids on the other connections of a spanning context (buffers: those made so far, under
  // their Spread's lock).
  std::vector<Replica> replicas;

  bool exists_on(const Connection* other) const {
    return other == connection ||
           std::any_of(replicas.begin(), replicas.end(), [&](const Replica& r) { return r.connection == other; });
  }
  // Its id on `other`; ClError(CL_INVALID_CONTEXT) where it has none.
  protocol::ObjectId id_on(const Connection* other) const {
    if (other == connection) return id;
    for (const Replica& replica : replicas)
      if (replica.connection == other) return replica.id;
    throw ClError{CL_INVALID_CONTEXT};
  }
};

template <class T>
void destroy(T* object);

// An internal reference: keeps an object alive for a dependent.
template <class T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* object) : object_(object) {
    if (object_) object_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(const Ref& other) : Ref(other.object_) {}
  Ref& operator=(Ref other) {
    std::swap(object_, other.object_);
    return *this;
  }
  ~Ref() {
    if (object_ && object_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(object_);
  }
  T* get() const { return object_; }
  T* operator->() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  T* object_ = nullptr;
};

}  // namespace hivecl::icd

// --- the handle types of the OpenCL API -----------------------------------------------

struct _cl_platform_id : hivecl::icd::IcdObject {};

struct _cl_device_id : hivecl::icd::IcdObject {
  struct InfoValue {
    cl_int error = CL_SUCCESS;
    std::vector<std::byte> value;
  };
  hivecl::icd::Connection* connection = nullptr;
  hivecl::protocol::ObjectId id = hivecl::protocol::no_object;
  cl_device_type type = 0;
  uint64_t size_max = UINT64_MAX;  // the largest value of the device's size_t (CL_DEVICE_ADDRESS_BITS wide)
  std::string node;
  std::map<cl_device_info, InfoValue> info;  // every parameter, as HiveCL answers it
  // Sub-devices (clCreateSubDevices): the device they were made from, which they hold, and one
  // count of the application's references and the holds of their contexts and sub-devices.
  // Root devices have no parent and are never released (OpenCL 1.2).
  cl_device_id parent = nullptr;
  std::atomic<cl_uint> refs{1};
};

// Callbacks the application registered to hear of an object's destruction.
template <class Handle>
struct DestructorCallbacks {
  using Function = void(CL_CALLBACK*)(Handle, void*);
  std::mutex mutex;
  std::vector<std::pair<Function, void*>> callbacks;

  void add(Function function, void* user_data) {
    std::lock_guard lock(mutex);
    callbacks.emplace_back(function, user_data);
  }
  // Most recently registered first, as the specification orders them.
  void run(Handle handle) {
    for (auto it = callbacks.rbegin(); it != callbacks.rend(); ++it) it->first(handle, it->second);
  }
};

// A context whose devices belong to several connections has a remote context on each (its
// parts: the primary `connection`, then the replicas, in the order of its devices).
struct _cl_context : hivecl::icd::Shared<_cl_context> {
  std::vector<cl_device_id> devices;
  std::vector<cl_context_properties> properties;  // as the application gave them, 0-terminated or empty
  DestructorCallbacks<cl_context> destructor_callbacks;
  // Spanning contexts: queues of HiveCL's own per part, made on first use, that move buffer
  // data between parts (index: the part's).
  std::mutex service_mutex;
  // With their connections: the context's replicas are gone when the queues are released.
  std::vector<hivecl::icd::Replica> service_queues;  // proxy to proxy: read what a proxy sends
  std::vector<hivecl::icd::Replica> landing_queues;  // write the data other proxies send
  std::vector<hivecl::icd::Replica> move_queues;     // read and write what moves through this process

  ~_cl_context();
  bool has_device(cl_device_id device) const;
  bool spans() const { return !replicas.empty(); }
  size_t part_count() const { return replicas.size() + 1; }
  hivecl::icd::Connection* part_connection(size_t part) const {
    return part == 0 ? connection : replicas[part - 1].connection;
  }
  // The index of `other`'s part; ClError(CL_INVALID_CONTEXT) where none is.
  size_t part_of(const hivecl::icd::Connection* other) const;
};

// Application memory, [begin, end): what a read fills, what a write takes its data from.
struct HostRange {
  uintptr_t begin = 0;
  uintptr_t end = UINTPTR_MAX;  // the default: all of it, where a read's extent is not worked out

  static HostRange of(const void* pointer, size_t size) {
    const auto begin = reinterpret_cast<uintptr_t>(pointer);
    return {begin, begin + size};
  }
  bool overlaps(const HostRange& other) const { return begin < other.end && other.begin < end; }
};

// A host-side piece of a command that is not finished when the device is: the data of a
// read still on its way to the application's memory.
struct PendingRead {
  std::shared_ptr<hivecl::icd::Incoming> incoming;
  uint64_t position;  // of its command in the queue
  HostRange fills;
};

struct _cl_command_queue : hivecl::icd::Shared<_cl_command_queue> {
  hivecl::icd::Ref<_cl_context> context;
  cl_device_id device = nullptr;
  cl_command_queue_properties properties = 0;
  std::vector<cl_queue_properties> property_list;  // CL_QUEUE_PROPERTIES_ARRAY
  std::atomic<uint64_t> next_position{0};
  // Commands whose enqueue call has ended (sent, or refused): with next_position, whether a
  // command may still be on its way to the queue.
  std::atomic<uint64_t> calls_ended{0};
  // Every command at a position below this one is known to have ended.
  std::atomic<uint64_t> ended_before{0};

  bool in_order() const { return !(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); }
  // Every command of the queue has ended: a clFinish has nothing to wait for.
  bool idle() const { return ended_before.load() == next_position.load(); }
  // The position below which every command has been sent, if no call is still sending one
  // (read in this order, a command sent meanwhile cannot hide an earlier one still on its way).
  std::optional<uint64_t> all_sent() const {
    const uint64_t ended = calls_ended.load();
    return ended == next_position.load() ? std::optional(ended) : std::nullopt;
  }
  void note_ended_before(uint64_t position);
  // Waits until every command so far has ended (a Finish request, unless idle()).
  void finish();
  void add_pending(PendingRead read);
  // Waits until the data of every read at or before `position` that fills memory in `range`
  // has arrived; their worst status.
  cl_int settle(uint64_t position, HostRange range = {});
  // Whether that is already so for every read at or before `position`, without waiting.
  bool settled(uint64_t position);
  // The reads at or before `position` whose data has not arrived yet.
  std::vector<PendingRead> unsettled(uint64_t position);

 private:
  std::mutex pending_mutex_;
  std::vector<PendingRead> pending_;
};

// What the client keeps of an image: its format and description as the application gave
// them, and how the image lies in the application's host_ptr (the step between rows, or
// between the images of a 1D array, and between slices).
struct ImageDescription {
  cl_image_format format{};
  cl_image_desc desc{};
  size_t element_size = 0;
  size_t row_step = 0;
  size_t slice_step = 0;
};

namespace hivecl::icd {
struct Spread;  // spanning.hpp
}

struct _cl_mem : hivecl::icd::Shared<_cl_mem> {
  struct Mapping {
    void* pointer;
    size_t offset;
    size_t size;
    cl_map_flags flags;
    // Images: the region mapped, how it lies at `pointer`, and the memory that holds it
    // when the image has no host_ptr.
    std::array<size_t, 3> origin{}, region{};
    size_t row_step = 0, slice_step = 0;
    std::shared_ptr<std::byte[]> storage;
  };
  hivecl::icd::Ref<_cl_context> context;
  hivecl::icd::Ref<_cl_mem> parent;  // sub-buffers: kept alive while they are
  size_t origin = 0;                 // sub-buffers: the offset in the parent
  cl_mem_flags flags = 0;  // as the application gave them (sub-buffers: with what they inherit)
  size_t size = 0;
  void* host_ptr = nullptr;  // CL_MEM_USE_HOST_PTR only
  bool uses_svm_pointer = false;  // host_ptr is inside an SVM allocation (svm.hpp), whose memory it uses
  std::optional<ImageDescription> image;  // images only
  hivecl::icd::Ref<_cl_mem> image_buffer;  // CL_MEM_OBJECT_IMAGE1D_BUFFER: the buffer it is made from
  std::vector<cl_mem_properties> properties;
  std::mutex mapping_mutex;
  std::unique_ptr<std::byte[]> shadow;  // host copy for mappings when there is no host_ptr
  std::unique_ptr<hivecl::icd::SharedShadow> shared_shadow;  // the same, shared with a proxy of this node
  std::vector<Mapping> mappings;
  DestructorCallbacks<cl_mem> destructor_callbacks;
  // Buffers and images of a spanning context (the root buffer's; sub-buffers use their
  // parent's): where each byte's latest data is.
  std::shared_ptr<hivecl::icd::Spread> spread;

  ~_cl_mem() { destructor_callbacks.run(this); }
};

namespace hivecl::kernels_parser {
struct Program;
}

struct _cl_program : hivecl::icd::Shared<_cl_program> {
  hivecl::icd::Ref<_cl_context> context;
  std::vector<cl_device_id> devices;
  std::string source;
  // What kernels-parser read from the source with the last successful build's or compile's
  // options; for a linked program, its inputs' kernels.
  std::mutex parsed_mutex;
  std::shared_ptr<const hivecl::kernels_parser::Program> parsed;

  std::shared_ptr<const hivecl::kernels_parser::Program> parsed_kernels() {
    std::lock_guard lock(parsed_mutex);
    return parsed;
  }
};

// One argument as the application last set it, and as the proxy last received it.
struct KernelArgSlot {
  hivecl::protocol::ArgClass arg_class = hivecl::protocol::ArgClass::unknown;
  std::optional<uint64_t> value_size;  // by-value arguments whose size the parser knows
  bool read_only = false;              // memory the kernel cannot write (__constant, read_only images)
  std::optional<hivecl::protocol::KernelArg> current;
  std::optional<hivecl::protocol::KernelArg> launched;
  const void* handle = nullptr;        // spanning contexts: the buffer or sampler `current` names
};

// What a launch's acceptance depends on besides its arguments' kinds and sizes: a shape the
// proxy accepted once is accepted again, so such launches do not wait for its answer.
struct LaunchShape {
  hivecl::protocol::ObjectId queue = hivecl::protocol::no_object;
  uint32_t work_dim = 0;
  bool offset = false;
  hivecl::protocol::WorkSizes local_size;  // empty: chosen by the device
  uint32_t uniform = 0;  // bit i: dimension i's global size is a multiple of the local one
  bool operator==(const LaunchShape&) const = default;
};

struct _cl_kernel : hivecl::icd::Shared<_cl_kernel> {
  hivecl::icd::Ref<_cl_program> program;
  // clSetKernelArg records here and sends nothing; a launch sends what changed, under the lock.
  std::mutex args_mutex;
  std::vector<KernelArgSlot> args;
  std::vector<LaunchShape> accepted_shapes;
  // The count of the connection's detached launches that failed on the proxy
  // (Connection::detached_failures) when `args` and `accepted_shapes` were last known right:
  // after a newer failure which arguments the proxy holds is unknown, so the next launch sends
  // all and waits.
  uint64_t failures_seen = 0;
  // Spanning contexts: the same kernel on the other connections (their ids are the replicas),
  // each with its own record of what its proxy holds.
  std::vector<std::unique_ptr<_cl_kernel>> parts;

  // The kernel that launches on `other` (this one, or one of its parts).
  _cl_kernel* part_on(const hivecl::icd::Connection* other);
};

struct _cl_event : hivecl::icd::Shared<_cl_event> {
  hivecl::icd::Ref<_cl_context> context;
  hivecl::icd::Ref<_cl_command_queue> queue;
  cl_command_type command_type = 0;
  uint64_t position = 0;
  // On an in-order queue, made when every command before it had been sent: its end is the end
  // of every command before it (_cl_command_queue::idle).
  bool ends_all_before = false;
  std::shared_ptr<hivecl::icd::Incoming> incoming;  // reads and maps: the data's arrival
  // CL_COMPLETE or an error once the command is seen to have ended (a status that never
  // changes again); CL_QUEUED until then.
  std::atomic<cl_int> ended_status{CL_QUEUED};
  // Its four timestamps (CL_PROFILING_COMMAND_QUEUED to _END) once seen after its end.
  std::mutex timestamps_mutex;
  std::optional<std::array<cl_ulong, 4>> timestamps;
};

struct _cl_sampler : hivecl::icd::Shared<_cl_sampler> {
  hivecl::icd::Ref<_cl_context> context;
  cl_bool normalized_coords = CL_TRUE;
  cl_addressing_mode addressing_mode = CL_ADDRESS_CLAMP;
  cl_filter_mode filter_mode = CL_FILTER_NEAREST;
  std::vector<cl_sampler_properties> properties;  // as the application gave them, 0-terminated or empty
};

namespace hivecl::icd {

// The handle kind, remote kind and invalid-handle error of each handle type.
template <class T>
struct HandleTraits;
template <> struct HandleTraits<_cl_platform_id> { static constexpr auto kind = HandleKind::platform; static constexpr cl_int invalid = CL_INVALID_PLATFORM; };
template <> struct HandleTraits<_cl_device_id> { static constexpr auto kind = HandleKind::device; static constexpr cl_int invalid = CL_INVALID_DEVICE; };
template <> struct HandleTraits<_cl_context> { static constexpr auto kind = HandleKind::context; static constexpr auto remote = protocol::ObjectKind::context; static constexpr cl_int invalid = CL_INVALID_CONTEXT; };
template <> struct HandleTraits<_cl_command_queue> { static constexpr auto kind = HandleKind::command_queue; static constexpr auto remote = protocol::ObjectKind::command_queue; static constexpr cl_int invalid = CL_INVALID_COMMAND_QUEUE; };
template <> struct HandleTraits<_cl_mem> { static constexpr auto kind = HandleKind::mem; static constexpr auto remote = protocol::ObjectKind::mem; static constexpr cl_int invalid = CL_INVALID_MEM_OBJECT; };
template <> struct HandleTraits<_cl_program> { static constexpr auto kind = HandleKind::program; static constexpr auto remote = protocol::ObjectKind::program; static constexpr cl_int invalid = CL_INVALID_PROGRAM; };
template <> struct HandleTraits<_cl_kernel> { static constexpr auto kind = HandleKind::kernel; static constexpr auto remote = protocol::ObjectKind::kernel; static constexpr cl_int invalid = CL_INVALID_KERNEL; };
template <> struct HandleTraits<_cl_event> { static constexpr auto kind = HandleKind::event; static constexpr auto remote = protocol::ObjectKind::event; static constexpr cl_int invalid = CL_INVALID_EVENT; };
template <> struct HandleTraits<_cl_sampler> { static constexpr auto kind = HandleKind::sampler; static constexpr auto remote = protocol::ObjectKind::sampler; static constexpr cl_int invalid = CL_INVALID_SAMPLER; };

// The object behind a handle, or ClError with the type's invalid-handle error.
template <class T>
T* checked(T* handle) {
  if (!handle || !is_live(handle, HandleTraits<T>::kind)) throw ClError{HandleTraits<T>::invalid};
  return handle;
}

// Makes a new object visible to the application.
template <class T>
T* publish(T* object) {
  register_handle(object, HandleTraits<T>::kind);
  return object;
}

// clRetain*: one more application reference.
template <class T>
void retain(T* handle) {
  checked(handle)->refs.fetch_add(1, std::memory_order_relaxed);
}

// Tells the proxy to drop the native object (no reply is awaited; nothing to send to a lost proxy).
void release_remote(Connection* connection, protocol::ObjectKind kind, protocol::ObjectId id);

// Tells the other connections of a spanning context to drop the object (spanning.hpp).
template <class T>
void release_replicas(T* object) {
  for (const Replica& replica : object->replicas) release_remote(replica.connection, HandleTraits<T>::remote, replica.id);
  object->replicas.clear();
}

// The last reference went: the handle dies and the proxy drops the native object.
template <class T>
void destroy(T* object) {
  unregister_handle(object);
  release_remote(object->connection, HandleTraits<T>::remote, object->id);
  release_replicas(object);
  delete object;
}

// clRelease*.
template <class T>
void release(T* handle) {
  T* object = checked(handle);
  if (object->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(object);
}

}  // namespace hivecl::icd
