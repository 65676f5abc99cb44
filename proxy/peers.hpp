// Buffer and image data and event statuses sent from proxy to proxy for contexts spanning
// several proxies (the messages and their sequence: protocol/messages.hpp, "proxy to proxy"). The
// receiving side keeps the tickets its clients said to expect; the sending side connects to
// the receiving proxy as a client of its own (watchdog, MPI_Comm_connect, Hello) and streams
// the range to it as the device reads it, chunk by chunk, or sends the event's status.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cl_error.hpp"
#include "config.hpp"
#include "protocol/messages.hpp"
#include "transport/engine.hpp"
#include "transport/tags.hpp"
#include "transport/watchdog.hpp"

namespace hivecl::proxy {

// Where one ticket's data lands: a range of a client's buffer or image (its pixels packed) and
// the queue that writes it (both retained), and the user event that completes once it has (or
// fails). An event's ticket has no queue and no memory object: its user event takes the status
// the sender sends.
struct PeerArrival {
  PeerArrival(uint32_t owner, cl_command_queue queue, cl_mem mem, uint64_t offset, uint64_t size, cl_event landed);
  PeerArrival(const PeerArrival&) = delete;
  PeerArrival& operator=(const PeerArrival&) = delete;
  ~PeerArrival();
  // Sets the user event: CL_COMPLETE, or the failure. Only the first call counts.
  void land(cl_int status);

  const uint32_t owner;  // the session of the client whose memory object it is
  uint32_t claimed_by = 0;  // the session of the sending proxy, once it claimed the ticket
  const cl_command_queue queue;
  const cl_mem mem;
  const uint64_t offset;
  const uint64_t size;

 private:
  cl_event landed_;
  std::atomic<bool> set_{false};
};

// The tickets of this proxy's clients whose data has not come yet.
class PeerTickets {
 public:
  // CL_INVALID_VALUE if the ticket is taken.
  void expect(const protocol::Bytes& ticket, std::shared_ptr<PeerArrival> arrival);
  // Session `sender` will send the ticket's data; CL_INVALID_VALUE if unknown or claimed.
  void claim(const protocol::Bytes& ticket, uint32_t sender);
  // The arrival of a ticket `sender` claimed, no longer expected; CL_INVALID_VALUE otherwise.
  std::shared_ptr<PeerArrival> take(const protocol::Bytes& ticket, uint32_t sender);
  // The owner's ticket fails with `status` (its sender could not take it).
  void cancel(const protocol::Bytes& ticket, uint32_t owner, cl_int status);
  // A session ended: tickets it owns are dropped (their events fail with its user events),
  // those it claimed fail.
  void forget_session(uint32_t session);

 private:
  // By the ticket's bytes as a string: a map keyed by the byte vectors draws a false
  // stringop-overread error from GCC 13 (-O2 and up) comparing them.
  static std::string key(const protocol::Bytes& ticket) {
    return {reinterpret_cast<const char*>(ticket.data()), ticket.size()};
  }

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<PeerArrival>> tickets_;
};

class PeerSend;  // one move's sending side (peers.cpp)

// This proxy's connection to another, as its client: synchronous calls, and requests whose
// answer only matters when it is a failure (logged).
class PeerLink {
 public:
  PeerLink(transport::Engine& engine, transport::LinkPtr link, std::string name)
      : engine_(engine), link_(std::move(link)), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const transport::LinkPtr& link() const { return link_; }
  bool lost() const { return lost_.load(); }
  size_t chunk_bytes() const { return chunk_bytes_; }
  void set_chunk_bytes(size_t bytes) { chunk_bytes_ = bytes; }
  // ClError: the other proxy's status, or peer_lost_status once it is gone.
  template <class M>
  typename M::Reply call(const typename M::Request& request);
  // Sends a request without waiting for its answer; its sequence number.
  template <class M>
  uint64_t send(const typename M::Request& request);
  // Sends bytes on the data tag of request `sequence`; `sent` runs when `data` may be reused.
  void send_data(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent);
  void send_status(uint64_t sequence, cl_int status);
  // Engine thread: an answer came.
  void on_reply(protocol::Bytes&& frame);
  // The other proxy is gone (or this one stops): waiting calls fail, nothing more is sent.
  void lose();
  // Makes `send` the last move sent on this link; the one before it, if it is still going.
  std::shared_ptr<PeerSend> exchange_last_send(const std::shared_ptr<PeerSend>& send);

 private:
  struct Pending {
    transport::Completion arrived;
    protocol::Bytes frame;
  };
  uint64_t send_frame(protocol::Opcode opcode, const protocol::Bytes& body, std::shared_ptr<Pending> pending);

  transport::Engine& engine_;
  transport::LinkPtr link_;
  std::string name_;
  size_t chunk_bytes_ = 0;
  std::atomic<bool> lost_{false};
  std::atomic<uint64_t> next_sequence_{1};
  std::mutex pending_mutex_;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::mutex last_send_mutex_;
  std::weak_ptr<PeerSend> last_send_;
};

// This proxy's connections to the proxies it sends data to, made on first use.
class PeerLinks {
 public:
  PeerLinks(const Config& config, transport::Engine& engine) : config_(config), engine_(engine) {}
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;
  ~PeerLinks();
  // The link to the proxy of the cluster at node:pid; CL_DEVICE_NOT_AVAILABLE if it cannot be reached.
  std::shared_ptr<PeerLink> to(const std::string& node, int32_t pid);
  // Says Goodbye on every link and drops them (the proxy stops; MPI is still up).
  void close();

 private:
  std::shared_ptr<PeerLink> connect(const protocol::ProxyRecord& record);

  const Config& config_;
  transport::Engine& engine_;
  std::mutex mutex_;
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<PeerLink>> links_;
  std::unique_ptr<transport::WatchdogMonitor> monitor_;
  MPI_Comm connect_comm_ = MPI_COMM_NULL;
};

template <class M>
typename M::Reply PeerLink::call(const typename M::Request& request) {
  auto pending = std::make_shared<Pending>();
  send_frame(M::opcode, protocol::to_bytes(request), pending);
  if (pending->arrived.wait() != transport::OpStatus::done) throw ClError{CL_DEVICE_NOT_AVAILABLE};
  protocol::Reader reader(pending->frame);
  protocol::FrameHeader header;
  typename M::Reply reply;
  if (!protocol::decode(reader, header)) throw ClError{CL_DEVICE_NOT_AVAILABLE};
  if (header.status != CL_SUCCESS) throw ClError{header.status};
  if (!protocol::decode(reader, reply) || !reader.at_end()) throw ClError{CL_DEVICE_NOT_AVAILABLE};
  return reply;
}

template <class M>
uint64_t PeerLink::send(const typename M::Request& request) {
  return send_frame(M::opcode, protocol::to_bytes(request), nullptr);
}

}  // namespace hivecl::proxy
