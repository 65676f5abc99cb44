// The wire protocol between libhivecl and hivecl-proxy: every message is declared
// here once, with its request and reply, and both sides encode and decode it from
// this declaration (codec.hpp). A frame on the control channel is a FrameHeader
// followed by the encoded request or reply. Bulk data (buffer contents) never
// travels in a control frame: it follows as chunks on the data tag of its request
// (see transport/tags.hpp), in the direction given by the message's `bulk`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/codec.hpp"

namespace hivecl::protocol {

// Changes whenever a message or the watchdog's handshake (transport/watchdog.hpp) changes;
// checked in Hello and in rendezvous records.
inline constexpr uint32_t protocol_version = 27;
inline constexpr uint32_t frame_magic = 0x48435600u | protocol_version;  // "\x01VCH"

// Ids of application-visible objects. Devices have fixed ids 1..n per proxy;
// ids of objects a client creates (sub-devices too) are chosen by the client, per session.
using ObjectId = uint64_t;
inline constexpr ObjectId no_object = 0;
inline constexpr ObjectId first_session_id = 1u << 16;

enum class ObjectKind : uint8_t { device, context, command_queue, mem, program, kernel, event, sampler };

enum class Bulk : uint8_t { none, to_proxy, from_proxy };

// status: proxy to client, the end of a transfer whose data went by memory (the header's
// sequence and status; no opcode), sent only on a shared-memory control channel
// (transport/control_channel.hpp); over MPI that status comes on the request's data tag.
// statuses: as status, the header's status for each of several transfers, whose sequences
// (std::vector<uint64_t>) follow the header (the reads of a run reported together).
// output: proxy to client, text that kernels printed on the proxy's node (KernelOutput follows
// the header; no opcode, no sequence), for the client's standard output.
enum class FrameKind : uint8_t { request, reply, status, statuses, output };

#define HIVECL_MESSAGES(X)                                                                                   \
  X(Hello) X(Goodbye) X(Release) X(GetInfo)                                                                  \
  X(CreateContext) X(CreateCommandQueue) X(Flush) X(Finish)                                                  \
  X(CreateBuffer) X(ReadBuffer) X(WriteBuffer) X(CopyBuffer) X(FillBuffer) X(EnqueueMarker)                 \
  X(CreateProgramWithSource) X(BuildProgram) X(GetProgramBinaries)                                           \
  X(CreateKernel) X(CreateKernelsInProgram) X(DescribeKernelArgs) X(ApplyKernelArgs) X(EnqueueNDRangeKernel)       \
  X(WaitForEvents) X(CreateUserEvent) X(SetUserEventStatus) X(WatchEvent)                                  \
  X(ForgetSegment)                                                                                           \
  /* images and samplers */ X(GetSupportedImageFormats) X(CreateImage) X(ReadImage) X(WriteImage)           \
  X(CopyImage) X(FillImage) X(CopyImageBuffer) X(CreateSampler)                                       \
  /* OpenCL 1.2 completeness (issue 4): sub-buffers, rectangular transfers, binaries, separate */             \
  /* compilation and linking, kernel clones */                                                                \
  X(CreateSubBuffer) X(ReadBufferRect) X(WriteBufferRect) X(CopyBufferRect)                                  \
  X(CreateProgramWithBinary) X(CompileProgram) X(LinkProgram) X(CloneKernel) X(CreateSubDevices)           \
  /* spanning contexts: buffer data and event statuses sent from proxy to proxy (issue 7) */                 \
  X(ExpectPeerData) X(CancelPeerTicket) X(SendToPeer) X(ClaimPeerTicket) X(PeerData)                          \
  X(ExpectPeerEvent) X(SignalPeer) X(PeerEventStatus)                                                        \
  /* in-process mappings, the native runtime's own (issue 12) */ X(MapBuffer) X(MapImage) X(UnmapMemObject)  \
  /* shared virtual memory, coarse-grained buffers */ X(SvmAlloc) X(SetKernelExecInfo)

enum class Opcode : uint16_t {
#define HIVECL_OPCODE(name) name,
  HIVECL_MESSAGES(HIVECL_OPCODE)
#undef HIVECL_OPCODE
  count
};

struct FrameHeader {
  uint32_t magic = frame_magic;
  Opcode opcode{};
  FrameKind kind = FrameKind::request;
  uint64_t sequence = 0;  // pairs a reply with its request; names the request's data tag
  int32_t status = 0;     // replies: the OpenCL status of the call
  HIVECL_FIELDS(magic, opcode, kind, sequence, status)
};

// Declares a message: its opcode, whether the caller waits for a reply, and bulk data direction.
#define HIVECL_MESSAGE(name, reply_expected, bulk_direction)  \
  static constexpr Opcode opcode = Opcode::name;                \
  static constexpr const char* message_name = #name;            \
  static constexpr bool has_reply = reply_expected;             \
  static constexpr Bulk bulk = bulk_direction;

struct Empty {
  HIVECL_FIELDS()
};

// --- session ---------------------------------------------------------------

struct Hello {
  HIVECL_MESSAGE(Hello, true, Bulk::none)
  struct Request {
    uint32_t version = protocol_version;
    Bytes watchdog_token;  // proves this MPI connection belongs to that watchdog socket
    std::string host;
    int32_t pid = 0;
    // The same-node data path (transport/peer_memory.hpp): the client's boot, what it asks
    // for, and a probe (bytes at an address of the client) the proxy must read to use it.
    std::string boot_id;
    uint8_t data_path = 0;  // transport::DataPathChoice
    uint64_t probe_address = 0;
    Bytes probe;
    // A shared-memory control channel the client offers (transport/control_channel.hpp): its
    // memfd's descriptor in the client, inode and size; control_bytes 0: none.
    int32_t control_fd = -1;
    uint64_t control_inode = 0;
    uint64_t control_bytes = 0;
    HIVECL_FIELDS(version, watchdog_token, host, pid, boot_id, data_path, probe_address, probe, control_fd,
                  control_inode, control_bytes)
  };
  struct Reply {
    uint32_t session = 0;
    uint8_t data_path = 0;     // transport::DataPath the proxy chose
    uint64_t chunk_bytes = 0;  // size of the bulk data messages on the MPI path
    uint64_t max_message_bytes = 0;  // the largest request frame the proxy accepts
    bool shared_control = false;     // frames go through the offered channel from now on (this reply too)
    HIVECL_FIELDS(session, data_path, chunk_bytes, max_message_bytes, shared_control)
  };
};

struct Goodbye {
  HIVECL_MESSAGE(Goodbye, true, Bulk::none)
  using Request = Empty;
  using Reply = Empty;
};

// The application released its last reference: the proxy drops the native object.
struct Release {
  HIVECL_MESSAGE(Release, false, Bulk::none)
  struct Request {
    ObjectKind kind{};
    ObjectId id = no_object;
    HIVECL_FIELDS(kind, id)
  };
  using Reply = Empty;
};

// clGet*Info for values the client does not hold itself. event_timestamps asks for timestamp
// `param` of an event: its reply holds all four (CL_PROFILING_COMMAND_QUEUED to _END, in that
// order) once the command has ended, else that one timestamp as event_profiling gives it.
enum class InfoFamily : uint8_t {
  context, command_queue, mem_object, program, program_build, kernel, kernel_work_group, kernel_arg,
  event, event_profiling, image, event_timestamps, kernel_sub_group
};

// The most bytes of a sub-group query's input value and answer that travel: every valid one
// is one to three size_t, and longer ones reach the native runtime as this long (still invalid).
inline constexpr uint32_t max_sub_group_query_bytes = 4096;

struct GetInfo {
  HIVECL_MESSAGE(GetInfo, true, Bulk::none)
  struct Request {
    InfoFamily family{};
    ObjectId object = no_object;
    ObjectId device = no_object;  // program_build, kernel_work_group, kernel_sub_group
    uint32_t arg_index = 0;       // kernel_arg
    uint32_t param = 0;
    // kernel_sub_group: the query's input value (absent: none given), and the application's
    // param_value_size (0: the size alone), which CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT
    // reads as the number of dimensions to answer in.
    Bytes input;
    uint32_t value_size = 0;
    HIVECL_FIELDS(family, object, device, arg_index, param, input, value_size)
  };
  struct Reply {
    Bytes value;
    HIVECL_FIELDS(value)
  };
};

// --- contexts and queues ---------------------------------------------------------

struct CreateContext {
  HIVECL_MESSAGE(CreateContext, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    std::vector<ObjectId> devices;
    std::vector<int64_t> properties;  // without CL_CONTEXT_PLATFORM: the proxy adds its own
    HIVECL_FIELDS(id, devices, properties)
  };
  using Reply = Empty;
};

struct CreateCommandQueue {
  HIVECL_MESSAGE(CreateCommandQueue, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    ObjectId device = no_object;
    std::vector<uint64_t> properties;  // cl_queue_properties list, 0-terminated
    HIVECL_FIELDS(id, context, device, properties)
  };
  using Reply = Empty;
};

struct Flush {
  HIVECL_MESSAGE(Flush, false, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    HIVECL_FIELDS(queue)
  };
  using Reply = Empty;
};

// Replied when every command enqueued before it has completed.
struct Finish {
  HIVECL_MESSAGE(Finish, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    HIVECL_FIELDS(queue)
  };
  using Reply = Empty;
};

// --- memory objects ---------------------------------------------------------------

// An address inside an SVM allocation (SvmAlloc): its buffer's id and the offset there.
struct SvmAddress {
  ObjectId allocation = no_object;
  uint64_t offset = 0;
  HIVECL_FIELDS(allocation, offset)
};

struct CreateBuffer {
  HIVECL_MESSAGE(CreateBuffer, true, Bulk::to_proxy)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    // As the proxy must use them: CL_MEM_USE_HOST_PTR became CL_MEM_COPY_HOST_PTR, but
    // in-process, where the native runtime uses the application's memory itself.
    uint64_t flags = 0;
    uint64_t size = 0;
    bool with_data = false;  // initial contents: as bulk data, or at host_address
    // On the memory data path, the initial contents' address in the client, which the proxy
    // reads itself; in-process, CL_MEM_USE_HOST_PTR's memory (0: they follow as bulk data).
    uint64_t host_address = 0;
    // Through a proxy, CL_MEM_USE_HOST_PTR memory inside an SVM allocation: the buffer uses that
    // allocation's memory there (flags keep CL_MEM_USE_HOST_PTR; no data goes with it).
    SvmAddress svm;
    HIVECL_FIELDS(id, context, flags, size, with_data, host_address, svm)
    uint64_t bulk_bytes() const { return with_data && !host_address ? size : 0; }
  };
  using Reply = Empty;
};

// Common tail of every enqueue: its wait list and the id of the event to create (or none).
struct EnqueueTail {
  std::vector<ObjectId> wait_list;
  ObjectId event = no_object;
  HIVECL_FIELDS(wait_list, event)
};

// The data follows the reply, once the device has produced it.
// Host memory of the client inside one of its shared segments (transport/shared_segment.hpp):
// the proxy maps the segment once and transfers to and from it directly.
struct SharedRange {
  uint64_t segment = 0;  // the client's number for it; 0: not in a segment
  int32_t fd = -1;       // its descriptor in the client
  uint64_t inode = 0;
  uint64_t segment_size = 0;
  uint64_t offset = 0;   // where the range starts in it
  HIVECL_FIELDS(segment, fd, inode, segment_size, offset)
};

struct ReadBuffer {
  HIVECL_MESSAGE(ReadBuffer, true, Bulk::from_proxy)
  struct Request {
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    uint64_t offset = 0;
    uint64_t size = 0;
    EnqueueTail tail;
    uint64_t host_address = 0;  // the memory data path: the client's memory; 0: the data moves over MPI
    SharedRange shared;         // or, on that path, memory the proxy maps too
    bool blocking = false;      // the client waits for the read's end right away
    // A non-blocking read the client did not wait for, answered only if it fails: on the memory
    // path its event then reports the failure, and its status comes as for any read; in-process
    // the failure comes back before the call returns.
    bool detached = false;
    HIVECL_FIELDS(queue, mem, offset, size, tail, host_address, shared, blocking, detached)
    uint64_t bulk_bytes() const { return host_address || shared.segment ? 0 : size; }
  };
  using Reply = Empty;
};

struct WriteBuffer {
  HIVECL_MESSAGE(WriteBuffer, true, Bulk::to_proxy)
  struct Request {
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    uint64_t offset = 0;
    uint64_t size = 0;
    EnqueueTail tail;
    uint64_t host_address = 0;  // the memory data path: the client's memory; 0: the data moves over MPI
    SharedRange shared;         // or, on that path, memory the proxy maps too
    // A non-blocking write the client did not wait for: its event reports a failure. From a
    // shared segment, it is answered only if it fails (the application's memory is the device's
    // to read until the command's event completes, as natively); in-process too, the failure
    // coming back before the call returns.
    bool detached = false;
    bool blocking = false;  // the client waits for the write's end right away
    // The client frees host_address's memory once the call returns (an unmap's shadow):
    // in-process, where the native runtime reads that memory itself, it reads a copy.
    bool transient = false;
    HIVECL_FIELDS(queue, mem, offset, size, tail, host_address, shared, detached, blocking, transient)
    uint64_t bulk_bytes() const { return host_address || shared.segment ? 0 : size; }
  };
  using Reply = Empty;
};

// The client freed a shared segment: the proxy unmaps it once its transfers are done.
struct ForgetSegment {
  HIVECL_MESSAGE(ForgetSegment, false, Bulk::none)
  struct Request {
    uint64_t segment = 0;
    HIVECL_FIELDS(segment)
  };
  using Reply = Empty;
};

struct CopyBuffer {
  HIVECL_MESSAGE(CopyBuffer, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId source = no_object;
    ObjectId destination = no_object;
    uint64_t source_offset = 0;
    uint64_t destination_offset = 0;
    uint64_t size = 0;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, source, destination, source_offset, destination_offset, size, tail)
  };
  using Reply = Empty;
};

struct FillBuffer {
  HIVECL_MESSAGE(FillBuffer, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    Bytes pattern;
    uint64_t offset = 0;
    uint64_t size = 0;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, mem, pattern, offset, size, tail)
  };
  using Reply = Empty;
};

// clEnqueueMarkerWithWaitList / clEnqueueBarrierWithWaitList, and the device side of
// commands that need no device work here (unmapping a region mapped for reading).
struct EnqueueMarker {
  HIVECL_MESSAGE(EnqueueMarker, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    bool barrier = false;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, barrier, tail)
  };
  using Reply = Empty;
};

// clCreateSubBuffer (CL_BUFFER_CREATE_TYPE_REGION), checked by the client against its parent.
struct CreateSubBuffer {
  HIVECL_MESSAGE(CreateSubBuffer, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId parent = no_object;
    uint64_t flags = 0;  // access flags only: host access is enforced by the client
    uint64_t origin = 0;
    uint64_t size = 0;
    HIVECL_FIELDS(id, parent, flags, origin, size)
  };
  using Reply = Empty;
};

// A box of a buffer: origin and region in bytes, rows and slices, with the buffer's pitches.
// The host side of a rectangular transfer is packed (row pitch region[0], slice pitch
// region[0] * region[1]) unless it stays in place (InPlace).
struct BufferBox {
  std::vector<uint64_t> origin;  // 3 values
  std::vector<uint64_t> region;  // 3 values
  uint64_t row_pitch = 0;
  uint64_t slice_pitch = 0;
  HIVECL_FIELDS(origin, region, row_pitch, slice_pitch)
  bool valid() const { return origin.size() == 3 && region.size() == 3; }
  uint64_t packed_bytes() const { return valid() ? region[0] * region[1] * region[2] : 0; }
};

// A rectangular or image transfer whose host data stays where the application has it, laid out
// with its pitches (as the native calls take them): in-process the native runtime reads or
// writes it there itself, as natively; on the memory data path the proxy gathers or scatters its
// rows itself. Otherwise (and always over MPI) the host data is packed.
struct InPlace {
  bool used = false;
  uint64_t row_pitch = 0;
  uint64_t slice_pitch = 0;
  bool blocking = false;  // in-process: the client waits for the command's end right away
  HIVECL_FIELDS(used, row_pitch, slice_pitch, blocking)
};

// A rectangular read or write: the packed data follows the request (writes) or the reply,
// once the device has produced it, then the status (reads). The direction of the data makes
// the read's and the write's requests two types, each with its executor.
template <Bulk direction>
struct RectTransfer {
  ObjectId queue = no_object;
  ObjectId mem = no_object;
  BufferBox box;
  EnqueueTail tail;
  uint64_t host_address = 0;  // the memory data path: the client's rows (in_place); 0: over MPI
  SharedRange shared;         // or, on that path, memory the proxy maps too
  InPlace in_place;
  HIVECL_FIELDS(queue, mem, box, tail, host_address, shared, in_place)
  uint64_t bulk_bytes() const { return host_address || shared.segment ? 0 : box.packed_bytes(); }
};

struct ReadBufferRect {
  HIVECL_MESSAGE(ReadBufferRect, true, Bulk::from_proxy)
  using Request = RectTransfer<Bulk::from_proxy>;
  using Reply = Empty;
};

struct WriteBufferRect {
  HIVECL_MESSAGE(WriteBufferRect, true, Bulk::to_proxy)
  using Request = RectTransfer<Bulk::to_proxy>;
  using Reply = Empty;
};

struct CopyBufferRect {
  HIVECL_MESSAGE(CopyBufferRect, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId source = no_object;
    ObjectId destination = no_object;
    BufferBox source_box;       // its region is the copy's
    BufferBox destination_box;  // its origin and pitches
    EnqueueTail tail;
    HIVECL_FIELDS(queue, source, destination, source_box, destination_box, tail)
  };
  using Reply = Empty;
};

// --- programs and kernels ---------------------------------------------------------

struct CreateProgramWithSource {
  HIVECL_MESSAGE(CreateProgramWithSource, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    std::string source;
    HIVECL_FIELDS(id, context, source)
  };
  using Reply = Empty;
};

struct BuildProgram {
  HIVECL_MESSAGE(BuildProgram, true, Bulk::none)
  struct Request {
    ObjectId program = no_object;
    std::vector<ObjectId> devices;  // empty: every device of the program's context
    std::string options;
    HIVECL_FIELDS(program, devices, options)
  };
  using Reply = Empty;
};

struct GetProgramBinaries {
  HIVECL_MESSAGE(GetProgramBinaries, true, Bulk::none)
  struct Request {
    ObjectId program = no_object;
    HIVECL_FIELDS(program)
  };
  struct Reply {
    std::vector<Bytes> binaries;  // one per device of the program, in CL_PROGRAM_DEVICES order
    HIVECL_FIELDS(binaries)
  };
};

// Replied with the call's status and each device's binary status, which a failed call reports too.
struct CreateProgramWithBinary {
  HIVECL_MESSAGE(CreateProgramWithBinary, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    std::vector<ObjectId> devices;
    std::vector<Bytes> binaries;  // one per device
    HIVECL_FIELDS(id, context, devices, binaries)
  };
  struct Reply {
    int32_t status = 0;  // the call's: CL_SUCCESS when the program was made
    std::vector<int32_t> binary_status;
    HIVECL_FIELDS(status, binary_status)
  };
};

struct CompileProgram {
  HIVECL_MESSAGE(CompileProgram, true, Bulk::none)
  struct Request {
    ObjectId program = no_object;
    std::vector<ObjectId> devices;  // empty: every device of the program's context
    std::string options;
    std::vector<ObjectId> headers;  // programs made from source
    std::vector<std::string> header_names;
    HIVECL_FIELDS(program, devices, options, headers, header_names)
  };
  using Reply = Empty;
};

// A link that fails with CL_LINK_PROGRAM_FAILURE still makes a program (for its build log):
// the reply says whether one was made under `id` and the link's own status.
struct LinkProgram {
  HIVECL_MESSAGE(LinkProgram, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    std::vector<ObjectId> devices;  // empty: every device of the context
    std::string options;
    std::vector<ObjectId> inputs;
    HIVECL_FIELDS(id, context, devices, options, inputs)
  };
  struct Reply {
    bool created = false;
    int32_t status = 0;
    HIVECL_FIELDS(created, status)
  };
};

// What a kernel argument is, as far as setting it goes. The client learns it from
// kernels-parser, or from the proxy (clGetKernelArgInfo) where the parser is not certain.
enum class ArgClass : uint8_t { memory, local, image, sampler, pipe, value, unknown };

struct KernelSignature {
  uint32_t num_args = 0;
  std::vector<ArgClass> classes;  // empty unless asked for
  HIVECL_FIELDS(num_args, classes)
};

struct CreateKernel {
  HIVECL_MESSAGE(CreateKernel, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId program = no_object;
    std::string name;
    bool describe_args = false;  // the client's parser is not certain of this kernel
    HIVECL_FIELDS(id, program, name, describe_args)
  };
  struct Reply {
    KernelSignature signature;
    HIVECL_FIELDS(signature)
  };
};

// Creates one kernel per id, at most as many as the program has; the reply names them in order.
struct CreateKernelsInProgram {
  HIVECL_MESSAGE(CreateKernelsInProgram, true, Bulk::none)
  struct Request {
    ObjectId program = no_object;
    std::vector<ObjectId> ids;
    bool describe_args = false;
    HIVECL_FIELDS(program, ids, describe_args)
  };
  struct Reply {
    std::vector<std::string> names;
    std::vector<KernelSignature> signatures;
    HIVECL_FIELDS(names, signatures)
  };
};

// The argument classes of a kernel whose parsed signature disagrees with the device's.
struct DescribeKernelArgs {
  HIVECL_MESSAGE(DescribeKernelArgs, true, Bulk::none)
  struct Request {
    ObjectId kernel = no_object;
    HIVECL_FIELDS(kernel)
  };
  using Reply = KernelSignature;
};

enum class ArgKind : uint8_t {
  value,        // bytes as given
  mem_object,   // a cl_mem of this session, or no_object for a NULL buffer
  no_value,     // arg_value was NULL: local memory of `size` bytes
  sampler,      // a cl_sampler of this session
  svm_pointer,  // clSetKernelArgSVMPointer: `offset` bytes into the SVM allocation `object` (none: NULL)
};

// One clSetKernelArg, recorded by the client and applied by the proxy at the next launch.
// A launch's sizes, one per dimension (up to three).
using WorkSizes = InlineVector<uint64_t, 3>;

struct KernelArg {
  uint32_t index = 0;
  ArgKind kind = ArgKind::value;
  uint64_t size = 0;
  ObjectId object = no_object;  // mem_object, sampler, svm_pointer (the allocation's buffer, SvmAlloc)
  Bytes value;                  // value
  uint64_t offset = 0;          // svm_pointer
  HIVECL_FIELDS(index, kind, size, object, value, offset)
};

// Hands the proxy the arguments set since the kernel's last launch without launching it, for
// queries whose answer depends on them (CL_KERNEL_LOCAL_MEM_SIZE).
struct ApplyKernelArgs {
  HIVECL_MESSAGE(ApplyKernelArgs, true, Bulk::none)
  struct Request {
    ObjectId kernel = no_object;
    std::vector<KernelArg> args;
    HIVECL_FIELDS(kernel, args)
  };
  using Reply = Empty;
};

// Carries the arguments set since the kernel's last launch; the proxy sets them, then enqueues.
// A detached launch is one the client did not wait for (a shape the proxy accepted before):
// if it fails all the same, its event is made to report the failure. In-process every launch is
// detached, its failure coming back before the call returns.
struct EnqueueNDRangeKernel {
  HIVECL_MESSAGE(EnqueueNDRangeKernel, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId kernel = no_object;
    std::vector<KernelArg> args;
    uint32_t work_dim = 0;
    WorkSizes global_offset;  // empty: NULL
    WorkSizes global_size;
    WorkSizes local_size;     // empty: NULL
    EnqueueTail tail;
    // Sent without waiting (the client is sure the proxy accepts it): answered only if it fails.
    bool detached = false;
    HIVECL_FIELDS(queue, kernel, args, work_dim, global_offset, global_size, local_size, tail, detached)
  };
  using Reply = Empty;
};

// Whether the proxy answers `request` only if it fails: a detached launch, a detached read (the
// memory path) or a detached write from a shared segment, which the client sends without a
// pending reply (a failure's reply finds none and tells the client that the kernel arguments
// the proxy holds may be in doubt). In-process (`in_process`) every launch, read or write the
// client marks detached, and every non-blocking rectangle or image transfer in place: its
// failure's reply comes in the caller's thread while the request runs, and the caller throws it.
template <class M>
constexpr bool answered_only_on_failure(const typename M::Request& request, bool in_process) {
  if constexpr (M::opcode == Opcode::EnqueueNDRangeKernel || M::opcode == Opcode::ReadBuffer)
    return request.detached;
  else if constexpr (M::opcode == Opcode::WriteBuffer)
    return request.detached && (in_process || request.shared.segment != 0);
  else if constexpr (M::opcode == Opcode::ReadBufferRect || M::opcode == Opcode::WriteBufferRect ||
                     M::opcode == Opcode::ReadImage || M::opcode == Opcode::WriteImage)
    return in_process && request.in_place.used && !request.in_place.blocking;
  else
    return false;
}

// Whether the answer to a blocking transfer (a read's status, a write's reply) comes once the
// device has ended the command, so that on an in-order queue the commands before it have ended
// too: in-process always (the native call, or the command's end), through a proxy for a read and
// for a write from a shared segment (a write through staging is answered once the proxy holds
// its data). Not for a transfer of nothing, which the proxy answers at once.
template <class M>
constexpr bool answered_after_end(const typename M::Request& request, bool in_process) {
  static_assert(M::opcode == Opcode::ReadBuffer || M::opcode == Opcode::WriteBuffer);
  if (!request.blocking || request.size == 0) return false;
  if constexpr (M::opcode == Opcode::WriteBuffer) return in_process || request.shared.segment != 0;
  return true;
}

// clCloneKernel: the native clone carries the arguments the proxy last applied; the client
// copies its own record of them.
struct CloneKernel {
  HIVECL_MESSAGE(CloneKernel, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId source = no_object;
    HIVECL_FIELDS(id, source)
  };
  using Reply = Empty;
};

// --- events --------------------------------------------------------------------------

// Replied when every event has completed (status: CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
// when one of them failed).
struct WaitForEvents {
  HIVECL_MESSAGE(WaitForEvents, true, Bulk::none)
  struct Request {
    std::vector<ObjectId> events;
    HIVECL_FIELDS(events)
  };
  using Reply = Empty;
};

struct CreateUserEvent {
  HIVECL_MESSAGE(CreateUserEvent, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    HIVECL_FIELDS(id, context)
  };
  using Reply = Empty;
};

struct SetUserEventStatus {
  HIVECL_MESSAGE(SetUserEventStatus, true, Bulk::none)
  struct Request {
    ObjectId event = no_object;
    int32_t execution_status = 0;
    HIVECL_FIELDS(event, execution_status)
  };
  using Reply = Empty;
};

// clSetEventCallback: replied when the event has reached `status` (CL_SUBMITTED, CL_RUNNING
// or CL_COMPLETE), with the status the native callback reported (negative: the command failed).
struct WatchEvent {
  HIVECL_MESSAGE(WatchEvent, true, Bulk::none)
  struct Request {
    ObjectId event = no_object;
    int32_t status = 0;
    HIVECL_FIELDS(event, status)
  };
  struct Reply {
    int32_t execution_status = 0;
    HIVECL_FIELDS(execution_status)
  };
};

// --- buffer and image data and event statuses sent from proxy to proxy (spanning contexts) ---
// The client moves a range of a buffer (of an image: of its pixels packed, row after row and
// layer after layer, on whole pixels) from proxy A to proxy B with a ticket, 16 random
// bytes it draws: it tells B to expect the ticket's data (ExpectPeerData), then A to send
// it (SendToPeer). A connects to B as a client of its own, claims the ticket (ClaimPeerTicket:
// should A vanish, B fails the arrival), reads the range once the commands that wrote it
// have ended, and sends it to B (PeerData) as it comes off the device. Only a proxy told the
// ticket can write through it. A command on B that waits for an event of A goes the same way:
// B expects the ticket's status (ExpectPeerEvent), A claims it and sends the event's status
// when the event has ended (SignalPeer, then PeerEventStatus).
inline constexpr size_t peer_ticket_bytes = 16;

// To the receiving proxy. `landing_queue` writes the data; `event` (a user event, no command of
// a queue, so that no later command waits behind a landing it does not need) completes once it
// has landed: the commands that use the range wait for it.
struct ExpectPeerData {
  HIVECL_MESSAGE(ExpectPeerData, true, Bulk::none)
  struct Request {
    Bytes ticket;
    ObjectId landing_queue = no_object;
    ObjectId mem = no_object;
    uint64_t offset = 0;
    uint64_t size = 0;
    ObjectId event = no_object;
    HIVECL_FIELDS(ticket, landing_queue, mem, offset, size, event)
  };
  using Reply = Empty;
};

// To the receiving proxy: the sender could not take the ticket (data or event); what waits
// for it fails with `status`.
struct CancelPeerTicket {
  HIVECL_MESSAGE(CancelPeerTicket, false, Bulk::none)
  struct Request {
    Bytes ticket;
    int32_t status = 0;
    HIVECL_FIELDS(ticket, status)
  };
  using Reply = Empty;
};

// To the sending proxy: read the range with `queue` once every command enqueued so far on
// `after_queues`, and `after_events` (data still landing there), have ended, and send it to
// proxy `peer_node`:`peer_pid` under `ticket`. Replied once the ticket is claimed and the reads
// enqueued, or, where what they follow may be held back (by a user event), once they will be
// enqueued when it has ended: a held send holds back no later one.
struct SendToPeer {
  HIVECL_MESSAGE(SendToPeer, true, Bulk::none)
  struct Request {
    Bytes ticket;
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    uint64_t offset = 0;
    uint64_t size = 0;
    std::vector<ObjectId> after_queues;
    std::vector<ObjectId> after_events;
    std::string peer_node;
    int32_t peer_pid = 0;
    HIVECL_FIELDS(ticket, queue, mem, offset, size, after_queues, after_events, peer_node, peer_pid)
  };
  using Reply = Empty;
};

// Proxy to proxy: the sender of a ticket's data or status, which this session now answers for.
struct ClaimPeerTicket {
  HIVECL_MESSAGE(ClaimPeerTicket, true, Bulk::none)
  struct Request {
    Bytes ticket;
    HIVECL_FIELDS(ticket)
  };
  using Reply = Empty;
};

// Proxy to proxy: a claimed ticket's data, in chunks of the receiver's chunk size on the
// request's data tag, then the status of the sender's reads (an int32) on the same tag.
struct PeerData {
  HIVECL_MESSAGE(PeerData, true, Bulk::to_proxy)
  struct Request {
    Bytes ticket;
    uint64_t size = 0;
    HIVECL_FIELDS(ticket, size)
    uint64_t bulk_bytes() const { return size; }
  };
  using Reply = Empty;
};

// To the proxy of a command that waits for an event of another proxy: `event`, a user event
// of `context` made here, completes (or fails) with the status the other proxy sends under
// `ticket`.
struct ExpectPeerEvent {
  HIVECL_MESSAGE(ExpectPeerEvent, true, Bulk::none)
  struct Request {
    Bytes ticket;
    ObjectId context = no_object;
    ObjectId event = no_object;
    HIVECL_FIELDS(ticket, context, event)
  };
  using Reply = Empty;
};

// To the proxy of `event`: claim `ticket` at proxy `peer_node`:`peer_pid`, and send it the
// event's status once the event has ended. Replied once the ticket is claimed.
struct SignalPeer {
  HIVECL_MESSAGE(SignalPeer, true, Bulk::none)
  struct Request {
    Bytes ticket;
    ObjectId event = no_object;
    std::string peer_node;
    int32_t peer_pid = 0;
    HIVECL_FIELDS(ticket, event, peer_node, peer_pid)
  };
  using Reply = Empty;
};

// Proxy to proxy: a claimed ticket's event status (CL_COMPLETE, or negative: it failed).
struct PeerEventStatus {
  HIVECL_MESSAGE(PeerEventStatus, false, Bulk::none)
  struct Request {
    Bytes ticket;
    int32_t status = 0;
    HIVECL_FIELDS(ticket, status)
  };
  using Reply = Empty;
};

// --- images and samplers -------------------------------------------------------------

struct ImageFormat {
  uint32_t channel_order = 0;
  uint32_t channel_data_type = 0;
  HIVECL_FIELDS(channel_order, channel_data_type)
  bool operator==(const ImageFormat&) const = default;
};

// An image's origin or region: x, y, z (or array index), in pixels.
struct Coordinates {
  uint64_t x = 0, y = 0, z = 0;
  HIVECL_FIELDS(x, y, z)
};

// A cl_image_desc without its pitches: an image's initial host data travels tightly packed (the
// client applies the application's pitches).
struct ImageShape {
  uint32_t type = 0;  // cl_mem_object_type
  uint64_t width = 0, height = 0, depth = 0, array_size = 0;
  ObjectId buffer = no_object;  // CL_MEM_OBJECT_IMAGE1D_BUFFER
  HIVECL_FIELDS(type, width, height, depth, array_size, buffer)
};

struct GetSupportedImageFormats {
  HIVECL_MESSAGE(GetSupportedImageFormats, true, Bulk::none)
  struct Request {
    ObjectId context = no_object;
    uint64_t flags = 0;
    uint32_t image_type = 0;
    HIVECL_FIELDS(context, flags, image_type)
  };
  struct Reply {
    std::vector<ImageFormat> formats;
    HIVECL_FIELDS(formats)
  };
};

struct CreateImage {
  HIVECL_MESSAGE(CreateImage, true, Bulk::to_proxy)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    uint64_t flags = 0;  // as for CreateBuffer: CL_MEM_USE_HOST_PTR became CL_MEM_COPY_HOST_PTR but in-process
    ImageFormat format;
    ImageShape shape;
    uint64_t data_bytes = 0;  // initial contents, packed, that follow as bulk data (0: none)
    // Or where they lie in the client, with the pitches the application gave: in-process the
    // native runtime reads them (CL_MEM_COPY_HOST_PTR) or uses them (CL_MEM_USE_HOST_PTR), on
    // the memory data path the proxy reads them (CL_MEM_COPY_HOST_PTR).
    uint64_t host_address = 0;
    uint64_t row_pitch = 0, slice_pitch = 0;
    HIVECL_FIELDS(id, context, flags, format, shape, data_bytes, host_address, row_pitch, slice_pitch)
    uint64_t bulk_bytes() const { return data_bytes; }
  };
  using Reply = Empty;
};

// The region's pixels, packed, follow the reply once the device has produced them.
struct ReadImage {
  HIVECL_MESSAGE(ReadImage, true, Bulk::from_proxy)
  struct Request {
    ObjectId queue = no_object;
    ObjectId image = no_object;
    Coordinates origin;
    Coordinates region;
    EnqueueTail tail;
    uint64_t host_address = 0;  // the memory data path: the client's memory; 0: the data moves over MPI
    SharedRange shared;         // or, on that path, memory the proxy maps too
    InPlace in_place;
    HIVECL_FIELDS(queue, image, origin, region, tail, host_address, shared, in_place)
  };
  using Reply = Empty;
};

struct WriteImage {
  HIVECL_MESSAGE(WriteImage, true, Bulk::to_proxy)
  struct Request {
    ObjectId queue = no_object;
    ObjectId image = no_object;
    Coordinates origin;
    Coordinates region;
    EnqueueTail tail;
    uint64_t host_address = 0;  // the memory data path: the client's memory; 0: the data moves over MPI
    SharedRange shared;         // or, on that path, memory the proxy maps too
    uint64_t data_bytes = 0;    // the region's pixels, packed
    InPlace in_place;
    HIVECL_FIELDS(queue, image, origin, region, tail, host_address, shared, data_bytes, in_place)
    uint64_t bulk_bytes() const { return host_address || shared.segment ? 0 : data_bytes; }
  };
  using Reply = Empty;
};

struct CopyImage {
  HIVECL_MESSAGE(CopyImage, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId source = no_object;
    ObjectId destination = no_object;
    Coordinates source_origin;
    Coordinates destination_origin;
    Coordinates region;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, source, destination, source_origin, destination_origin, region, tail)
  };
  using Reply = Empty;
};

struct FillImage {
  HIVECL_MESSAGE(FillImage, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId image = no_object;
    Bytes color;  // four 32-bit channels
    Coordinates origin;
    Coordinates region;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, image, color, origin, region, tail)
  };
  using Reply = Empty;
};

// In-process only (elsewhere CL_INVALID_VALUE): a mapping is the native runtime's own, as
// natively, and its address this process's memory. The reply comes once the map is enqueued; a
// blocking map's status follows on the request's data tag once the command has ended.
struct MapBuffer {
  HIVECL_MESSAGE(MapBuffer, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    uint64_t flags = 0;  // cl_map_flags
    uint64_t offset = 0;
    uint64_t size = 0;
    bool blocking = false;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, mem, flags, offset, size, blocking, tail)
  };
  struct Reply {
    uint64_t address = 0;
    HIVECL_FIELDS(address)
  };
};

struct MapImage {
  HIVECL_MESSAGE(MapImage, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId image = no_object;
    uint64_t flags = 0;  // cl_map_flags
    Coordinates origin;
    Coordinates region;
    bool blocking = false;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, image, flags, origin, region, blocking, tail)
  };
  struct Reply {
    uint64_t address = 0;
    uint64_t row_pitch = 0;
    uint64_t slice_pitch = 0;
    HIVECL_FIELDS(address, row_pitch, slice_pitch)
  };
};

// Ends a mapping made by MapBuffer or MapImage (in-process only, as they are).
struct UnmapMemObject {
  HIVECL_MESSAGE(UnmapMemObject, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId mem = no_object;
    uint64_t address = 0;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, mem, address, tail)
  };
  using Reply = Empty;
};

// --- shared virtual memory -----------------------------------------------------------
// An SVM allocation is the native runtime's clSVMAlloc on the proxy, with a native buffer over
// it (CL_MEM_USE_HOST_PTR on that memory, object `id`) through which HiveCL's transfers, copies,
// fills and mappings reach it as a buffer's (in-process a mapping of it is the runtime's SVM
// map: proxy/memory.cpp); its release frees both. The client sees the
// allocation at the address the proxy's runtime chose (README: "Shared virtual memory"), and names
// an address in it as its buffer and an offset, which the proxy checks against the allocation.
struct SvmAlloc {
  HIVECL_MESSAGE(SvmAlloc, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    uint64_t flags = 0;  // cl_svm_mem_flags
    uint64_t size = 0;
    uint32_t alignment = 0;
    HIVECL_FIELDS(id, context, flags, size, alignment)
  };
  struct Reply {
    uint64_t address = 0;
    HIVECL_FIELDS(address)
  };
};

// clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_SVM_PTRS): the allocations a kernel reaches through
// pointers stored in memory rather than through its arguments.
struct SetKernelExecInfo {
  HIVECL_MESSAGE(SetKernelExecInfo, true, Bulk::none)
  struct Request {
    ObjectId kernel = no_object;
    std::vector<SvmAddress> pointers;
    HIVECL_FIELDS(kernel, pointers)
  };
  using Reply = Empty;
};

// clEnqueueCopyImageToBuffer (to_buffer) and clEnqueueCopyBufferToImage.
struct CopyImageBuffer {
  HIVECL_MESSAGE(CopyImageBuffer, true, Bulk::none)
  struct Request {
    ObjectId queue = no_object;
    ObjectId image = no_object;
    ObjectId buffer = no_object;
    bool to_buffer = false;
    Coordinates origin;
    Coordinates region;
    uint64_t buffer_offset = 0;
    EnqueueTail tail;
    HIVECL_FIELDS(queue, image, buffer, to_buffer, origin, region, buffer_offset, tail)
  };
  using Reply = Empty;
};

struct CreateSampler {
  HIVECL_MESSAGE(CreateSampler, true, Bulk::none)
  struct Request {
    ObjectId id = no_object;
    ObjectId context = no_object;
    bool normalized_coords = false;
    uint32_t addressing_mode = 0;
    uint32_t filter_mode = 0;
    HIVECL_FIELDS(id, context, normalized_coords, addressing_mode, filter_mode)
  };
  using Reply = Empty;
};

// --- devices: the records a proxy publishes (ProxyRecord), and sub-devices made from them ------

// One clGetDeviceInfo answer of the native device, error included, so the client can
// answer every device query without a round trip.
struct DeviceInfoEntry {
  uint32_t param = 0;
  int32_t error = 0;
  Bytes value;
  HIVECL_FIELDS(param, error, value)
};

struct DeviceRecord {
  ObjectId id = no_object;
  std::string native_platform;
  std::vector<DeviceInfoEntry> info;
  // Where the device sits in its node (hwloc): "DDDD:BB:DD.F", and its NUMA node; "" and -1
  // where unknown (CPU devices, no PCI information).
  std::string pci_bus_id;
  int32_t numa_node = -1;
  HIVECL_FIELDS(id, native_platform, info, pci_bus_id, numa_node)
};

// clCreateSubDevices of a device or sub-device of the proxy: `properties` as the application gave
// them, 0-terminated; `ids`, one per sub-device the application has room for (at most its
// CL_DEVICE_PARTITION_MAX_SUB_DEVICES; none: only count them). Replied with the count of the
// partition and, when made, each sub-device's record under its id.
inline constexpr size_t max_partition_properties = 1024;
struct CreateSubDevices {
  HIVECL_MESSAGE(CreateSubDevices, true, Bulk::none)
  struct Request {
    ObjectId device = no_object;
    std::vector<int64_t> properties;
    std::vector<ObjectId> ids;
    HIVECL_FIELDS(device, properties, ids)
  };
  struct Reply {
    uint32_t count = 0;
    std::vector<DeviceRecord> devices;
    HIVECL_FIELDS(count, devices)
  };
};

#undef HIVECL_MESSAGE

// Calls visitor.template operator()<Message>() for every message of the table.
template <class Visitor>
void for_each_message(Visitor&& visitor) {
#define HIVECL_VISIT(name) visitor.template operator()<name>();
  HIVECL_MESSAGES(HIVECL_VISIT)
#undef HIVECL_VISIT
}

// Calls visitor.template operator()<Message>() for the message of `opcode`; false if unknown.
template <class Visitor>
bool visit_opcode(Opcode opcode, Visitor&& visitor) {
  switch (opcode) {
#define HIVECL_CASE(name)                     \
  case Opcode::name:                          \
    visitor.template operator()<name>();      \
    return true;
    HIVECL_MESSAGES(HIVECL_CASE)
#undef HIVECL_CASE
    default:
      return false;
  }
}

// --- what kernels print (printf), proxy to client (FrameKind::output) --------------------

struct KernelOutput {
  Bytes text;
  HIVECL_FIELDS(text)
};

// --- rendezvous records: what a proxy publishes about itself --------------------------

struct ProxyRecord {
  uint32_t magic = frame_magic;
  std::string node;
  int32_t pid = 0;
  std::vector<std::string> watchdog_hosts;  // addresses of the proxy's node, best first
  uint16_t watchdog_port = 0;
  std::vector<DeviceRecord> devices;
  HIVECL_FIELDS(magic, node, pid, watchdog_hosts, watchdog_port, devices)
};

// What one session of a proxy holds and has done (see proxy/statistics.hpp).
struct SessionStatus {
  uint32_t session = 0;
  std::string client_host;
  int32_t client_pid = 0;
  int64_t connected_at = 0;  // seconds since the epoch
  uint64_t objects = 0;
  uint64_t device_bytes = 0;  // in the session's memory objects
  uint64_t bytes_to_proxy = 0;
  uint64_t bytes_to_client = 0;
  uint64_t calls = 0;
  HIVECL_FIELDS(session, client_host, client_pid, connected_at, objects, device_bytes, bytes_to_proxy,
                bytes_to_client, calls)
};

// A proxy's live state, rewritten by the proxy every second next to its record
// (proxies/<node>-<pid>.status) for `hivecl-cluster status`.
struct ProxyStatus {
  uint32_t magic = frame_magic;
  int64_t updated_at = 0;  // seconds since the epoch
  std::vector<SessionStatus> sessions;
  HIVECL_FIELDS(magic, updated_at, sessions)
};

}  // namespace hivecl::protocol
