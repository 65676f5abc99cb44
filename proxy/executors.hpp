// The proxy's executors: one `execute` per message of the table, defined in the file
// of its object family (context.cpp, queue.cpp, memory.cpp, image.cpp, sampler.cpp,
// program.cpp, kernel.cpp, event.cpp; session-level ones in session.cpp, GetInfo in info.cpp, proxy to
// proxy data in peers.cpp). An executor
// returns the reply or throws ClError; messages whose reply waits for the device
// take a Replier instead and answer from a native callback.
#pragma once

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "protocol/messages.hpp"
#include "proxy/completion.hpp"
#include "proxy/session.hpp"

namespace hivecl::proxy {

// What an executor knows of the request it runs.
struct Call {
  Session& session;
  uint64_t sequence;
  bool bulk_consumed = false;  // the request's bulk data has been received
  // In-process: the completions the caller's thread waits for itself once the request has
  // run (null over MPI, where the session's thread must not wait).
  std::vector<CallerWait>* caller_waits = nullptr;
};

// Runs `action` once `event` has completed, as when_complete does, for a request whose
// caller waits for that right away (clWaitForEvents, a blocking transfer): in-process the
// application's own thread waits, after the request, sparing the hop through a completion
// thread (tens of microseconds per blocking call).
inline void when_complete(Call& call, cl_event event, std::function<void(cl_int status)> action) {
  if (!call.caller_waits) return when_complete(event, std::move(action));
  clRetainEvent(event);
  call.caller_waits->push_back([event, action = std::move(action)](std::mutex&) {
    wait_then(event, action);
    clReleaseEvent(event);
  });
}

template <class M>
inline constexpr bool replies_later = false;
template <>
inline constexpr bool replies_later<protocol::Finish> = true;
template <>
inline constexpr bool replies_later<protocol::WaitForEvents> = true;
template <>
inline constexpr bool replies_later<protocol::ReadBuffer> = true;
template <>
inline constexpr bool replies_later<protocol::WriteBuffer> = true;
template <>
inline constexpr bool replies_later<protocol::WatchEvent> = true;
template <>
inline constexpr bool replies_later<protocol::ReadImage> = true;
template <>
inline constexpr bool replies_later<protocol::ReadBufferRect> = true;
template <>
inline constexpr bool replies_later<protocol::WriteImage> = true;
template <>
inline constexpr bool replies_later<protocol::WriteBufferRect> = true;
template <>
inline constexpr bool replies_later<protocol::MapBuffer> = true;
template <>
inline constexpr bool replies_later<protocol::MapImage> = true;

namespace p = protocol;

p::Hello::Reply execute(Call&, const p::Hello::Request&);
p::Goodbye::Reply execute(Call&, const p::Goodbye::Request&);
p::Release::Reply execute(Call&, const p::Release::Request&);
p::GetInfo::Reply execute(Call&, const p::GetInfo::Request&);
p::CreateContext::Reply execute(Call&, const p::CreateContext::Request&);
p::CreateCommandQueue::Reply execute(Call&, const p::CreateCommandQueue::Request&);
p::Flush::Reply execute(Call&, const p::Flush::Request&);
void execute(Call&, const p::Finish::Request&, const Replier& later);
p::CreateBuffer::Reply execute(Call&, const p::CreateBuffer::Request&);
void execute(Call&, const p::ReadBuffer::Request&, const Replier& later);
void execute(Call&, const p::WriteBuffer::Request&, const Replier& later);
p::CopyBuffer::Reply execute(Call&, const p::CopyBuffer::Request&);
p::FillBuffer::Reply execute(Call&, const p::FillBuffer::Request&);
p::EnqueueMarker::Reply execute(Call&, const p::EnqueueMarker::Request&);
p::CreateProgramWithSource::Reply execute(Call&, const p::CreateProgramWithSource::Request&);
p::BuildProgram::Reply execute(Call&, const p::BuildProgram::Request&);
p::GetProgramBinaries::Reply execute(Call&, const p::GetProgramBinaries::Request&);
p::CreateKernel::Reply execute(Call&, const p::CreateKernel::Request&);
p::CreateKernelsInProgram::Reply execute(Call&, const p::CreateKernelsInProgram::Request&);
p::DescribeKernelArgs::Reply execute(Call&, const p::DescribeKernelArgs::Request&);
p::ApplyKernelArgs::Reply execute(Call&, const p::ApplyKernelArgs::Request&);
p::EnqueueNDRangeKernel::Reply execute(Call&, const p::EnqueueNDRangeKernel::Request&);
void execute(Call&, const p::WaitForEvents::Request&, const Replier& later);
p::CreateUserEvent::Reply execute(Call&, const p::CreateUserEvent::Request&);
p::SetUserEventStatus::Reply execute(Call&, const p::SetUserEventStatus::Request&);
void execute(Call&, const p::WatchEvent::Request&, const Replier& later);
p::ForgetSegment::Reply execute(Call&, const p::ForgetSegment::Request&);
// images and samplers
p::GetSupportedImageFormats::Reply execute(Call&, const p::GetSupportedImageFormats::Request&);
p::CreateImage::Reply execute(Call&, const p::CreateImage::Request&);
void execute(Call&, const p::ReadImage::Request&, const Replier& later);
void execute(Call&, const p::WriteImage::Request&, const Replier& later);
p::CopyImage::Reply execute(Call&, const p::CopyImage::Request&);
p::FillImage::Reply execute(Call&, const p::FillImage::Request&);
p::CopyImageBuffer::Reply execute(Call&, const p::CopyImageBuffer::Request&);
p::CreateSampler::Reply execute(Call&, const p::CreateSampler::Request&);
p::CreateSubBuffer::Reply execute(Call&, const p::CreateSubBuffer::Request&);
void execute(Call&, const p::ReadBufferRect::Request&, const Replier& later);
void execute(Call&, const p::WriteBufferRect::Request&, const Replier& later);
p::CopyBufferRect::Reply execute(Call&, const p::CopyBufferRect::Request&);
p::CreateProgramWithBinary::Reply execute(Call&, const p::CreateProgramWithBinary::Request&);
p::CompileProgram::Reply execute(Call&, const p::CompileProgram::Request&);
p::LinkProgram::Reply execute(Call&, const p::LinkProgram::Request&);
p::CloneKernel::Reply execute(Call&, const p::CloneKernel::Request&);
p::CreateSubDevices::Reply execute(Call&, const p::CreateSubDevices::Request&);
// proxy to proxy (peers.cpp)
p::ExpectPeerData::Reply execute(Call&, const p::ExpectPeerData::Request&);
p::CancelPeerTicket::Reply execute(Call&, const p::CancelPeerTicket::Request&);
p::SendToPeer::Reply execute(Call&, const p::SendToPeer::Request&);
p::ClaimPeerTicket::Reply execute(Call&, const p::ClaimPeerTicket::Request&);
p::PeerData::Reply execute(Call&, const p::PeerData::Request&);
p::ExpectPeerEvent::Reply execute(Call&, const p::ExpectPeerEvent::Request&);
p::SignalPeer::Reply execute(Call&, const p::SignalPeer::Request&);
p::PeerEventStatus::Reply execute(Call&, const p::PeerEventStatus::Request&);
void execute(Call&, const p::MapBuffer::Request&, const Replier& later);
void execute(Call&, const p::MapImage::Request&, const Replier& later);
p::UnmapMemObject::Reply execute(Call&, const p::UnmapMemObject::Request&);
p::SvmAlloc::Reply execute(Call&, const p::SvmAlloc::Request&);
p::SetKernelExecInfo::Reply execute(Call&, const p::SetKernelExecInfo::Request&);

// --- helpers shared by the executors ---

// What every enqueue needs: the native queue and wait list, checked along with the id
// the command's event will get, before anything is enqueued.
struct Enqueue {
  cl_command_queue queue;
  std::vector<cl_event> waits;
  Session::QueueFacts facts;  // of `queue`
  cl_uint wait_count() const { return static_cast<cl_uint>(waits.size()); }
  const cl_event* wait_list() const { return waits.empty() ? nullptr : waits.data(); }
};
Enqueue prepare_enqueue(Call& call, protocol::ObjectId queue, const protocol::EnqueueTail& tail);
// The session's staging ring of the context of `queue` (memory.cpp).
StagingRing& staging_of(Session& session, cl_command_queue queue);
// The devices of a native context (memory.cpp).
std::vector<cl_device_id> context_devices(cl_context context);
// CL_INVALID_VALUE unless [offset, offset + size) lies within a native memory object.
void check_range(cl_mem mem, uint64_t offset, uint64_t size);
// A client may name its own memory (host_address) only on the memory data path.
void check_data_path(Session& session, uint64_t host_address);
// Whether the session is the application's own, served in-process (transport/in_process.hpp).
inline bool in_process(Session& session) { return session.data_path().kind() == transport::DataPath::in_process; }
// The data at `host_address` in the client's memory, whole, fetched through the data path
// into host memory of its own (memory.cpp).
std::shared_ptr<HostBuffer> receive_data(Call& call, uint64_t host_address, uint64_t size);
// Keeps `data` until the device is done with the command of `event` (memory.cpp).
void hold_until_complete(cl_event event, std::shared_ptr<HostBuffer> data);
// A read into host memory of its own (over MPI, a rectangle's or an image's): once the device has
// filled `data`, it goes to the client chunk by chunk, then the read's status (memory.cpp).
void deliver_when_filled(Session& session, cl_event event, const Replier& later, uint64_t host_address,
                         std::shared_ptr<HostBuffer> data);
// The native image of `id`, and its type where `type` is given; CL_INVALID_MEM_OBJECT for a
// buffer (image.cpp).
cl_mem image_of(Session& session, protocol::ObjectId id, cl_mem_object_type* type = nullptr);
// A native image's extent in the coordinates its transfers take (pixels, then rows or array
// layers, then slices or array layers) and the bytes of a pixel (image.cpp).
std::pair<std::array<size_t, 3>, size_t> image_layout(cl_mem image);
// clSetKernelArg of a sampler argument the client recorded (sampler.cpp).
cl_int set_sampler_arg(Session& session, cl_kernel kernel, const protocol::KernelArg& arg);
// Registers the event a command produced under the id the client chose, or releases it.
void keep_event(Call& call, protocol::ObjectId id, cl_event event);
// Where a command's native event goes: nowhere when the client asked for none (NVIDIA's
// runtime spends about a microsecond making and releasing one, and loops launch kernels).
inline cl_event* event_wanted(protocol::ObjectId id, cl_event& event) {
  return id == protocol::no_object ? nullptr : &event;
}
// Whether `request` is a read the client did not wait for, into a shared segment, whose status
// may wait in the session's ReadReports (memory.cpp, on an in-order queue); the session sends
// them before any other request. Not a read with a wait list: what it waits for may hold it back
// (a user event), and the reads reported with it would wait too, where natively they end.
template <class Request>
bool reported_together(const Request& request) {
  if constexpr (std::is_same_v<Request, protocol::ReadBuffer::Request>)
    return request.detached && request.shared.segment != 0 && request.tail.wait_list.empty();
  else
    return false;
}
// Registers, under the id the client chose, an event that reports `status` (a failure), for
// a command that the client did not wait for and that could not be enqueued.
void keep_failed_event(Call& call, protocol::ObjectId queue, protocol::ObjectId id, cl_int status);
// Whether the client gave the application a command's event before the proxy answered it: a
// detached command through a proxy (in-process a detached command's failure comes back before
// the call returns, and no event was handed out).
inline bool event_handed_out_unanswered(Session& session, bool detached) { return detached && !in_process(session); }
// Reads a native clGet*Info value whole; `query(size, value, size_ret)` is the bound clGet*Info.
// Most values are small: one call with room for them, instead of asking the size first (a
// native query cost 0.24 µs on NVIDIA).
template <class Query>
protocol::Bytes query_info(Query&& query) {
  std::array<std::byte, 64> small;
  size_t size = 0;
  if (query(small.size(), small.data(), &size) == CL_SUCCESS && size <= small.size())
    return protocol::Bytes(small.begin(), small.begin() + static_cast<std::ptrdiff_t>(size));
  check(query(0, nullptr, &size));
  protocol::Bytes value(size);
  check(query(size, value.empty() ? nullptr : value.data(), nullptr));
  return value;
}
// A string value read by query_info, up to its terminating NUL.
inline std::string text_info(const protocol::Bytes& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()),
                     strnlen(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}
// A string as a clGet*Info value, with its terminating NUL.
inline protocol::Bytes string_info(std::string_view text) {
  protocol::Bytes value(text.size() + 1);
  std::memcpy(value.data(), text.data(), text.size());
  return value;
}

}  // namespace hivecl::proxy
