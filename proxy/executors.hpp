// The proxy's executors: one `execute` per message of the table, defined in the file
// of its object family (context.cpp, queue.cpp, memory.cpp, program.cpp, kernel.cpp,
// event.cpp; session-level ones in session.cpp, GetInfo in info.cpp). An executor
// returns the reply or throws ClError; messages whose reply waits for the device
// take a Replier instead and answer from a native callback.
#pragma once

#include "protocol/messages.hpp"
#include "proxy/completion.hpp"
#include "proxy/session.hpp"

namespace hivecl::proxy {

// What an executor knows of the request it runs.
struct Call {
  Session& session;
  uint64_t sequence;
  bool bulk_consumed = false;  // the request's bulk data has been received
};

template <class M>
inline constexpr bool replies_later = false;
template <>
inline constexpr bool replies_later<protocol::Finish> = true;
template <>
inline constexpr bool replies_later<protocol::WaitForEvents> = true;
template <>
inline constexpr bool replies_later<protocol::ReadBuffer> = true;
template <>
inline constexpr bool replies_later<protocol::WatchEvent> = true;

namespace p = protocol;

p::Hello::Reply execute(Call&, const p::Hello::Request&);
p::Goodbye::Reply execute(Call&, const p::Goodbye::Request&);
p::Release::Reply execute(Call&, const p::Release::Request&);
p::GetInfo::Reply execute(Call&, const p::GetInfo::Request&);
p::CreateContext::Reply execute(Call&, const p::CreateContext::Request&);
p::CreateCommandQueue::Reply execute(Call&, const p::CreateCommandQueue::Request&);
p::Flush::Reply execute(Call&, const p::Flush::Request&);
void execute(Call&, const p::Finish::Request&, Replier later);
p::CreateBuffer::Reply execute(Call&, const p::CreateBuffer::Request&);
void execute(Call&, const p::ReadBuffer::Request&, Replier later);
p::WriteBuffer::Reply execute(Call&, const p::WriteBuffer::Request&);
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
void execute(Call&, const p::WaitForEvents::Request&, Replier later);
p::CreateUserEvent::Reply execute(Call&, const p::CreateUserEvent::Request&);
p::SetUserEventStatus::Reply execute(Call&, const p::SetUserEventStatus::Request&);
void execute(Call&, const p::WatchEvent::Request&, Replier later);

// --- helpers shared by the executors ---

// What every enqueue needs: the native queue and wait list, checked along with the id
// the command's event will get, before anything is enqueued.
struct Enqueue {
  cl_command_queue queue;
  std::vector<cl_event> waits;
  cl_uint wait_count() const { return static_cast<cl_uint>(waits.size()); }
  const cl_event* wait_list() const { return waits.empty() ? nullptr : waits.data(); }
};
Enqueue prepare_enqueue(Call& call, protocol::ObjectId queue, const protocol::EnqueueTail& tail);
// Registers the event a command produced under the id the client chose, or releases it.
void keep_event(Call& call, protocol::ObjectId id, cl_event event);
// Registers, under the id the client chose, an event that reports `status` (a failure), for
// a command that the client did not wait for and that could not be enqueued.
void keep_failed_event(Call& call, protocol::ObjectId queue, protocol::ObjectId id, cl_int status);
// Reads a native clGet*Info value whole; `query(size, value, size_ret)` is the bound clGet*Info.
template <class Query>
protocol::Bytes query_info(Query&& query) {
  size_t size = 0;
  check(query(0, nullptr, &size));
  protocol::Bytes value(size);
  check(query(size, value.empty() ? nullptr : value.data(), nullptr));
  return value;
}

}  // namespace hivecl::proxy
