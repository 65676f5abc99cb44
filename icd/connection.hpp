// libhivecl's connection to one proxy: made on first use (watchdog socket, then
// MPI_Comm_connect, then Hello; with a proxy of this node the Hello goes with the watchdog's
// admission and no MPI at all), it carries calls (request, optional bulk data out,
// reply) and the bulk data of reads. When the watchdog reports the proxy gone, every
// waiting call fails with peer_lost_status and later calls fail at once.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "cl_error.hpp"
#include "log.hpp"
#include "protocol/messages.hpp"
#include "transport/control_channel.hpp"
#include "transport/engine.hpp"
#include "transport/in_process.hpp"
#include "transport/watchdog.hpp"
#include "transport/peer_memory.hpp"
#include "transport/tags.hpp"

namespace hivecl::icd {

class Cluster;
class Connection;

// The data of one read, arriving in the application's memory, then the read's status.
class Incoming {
 public:
  static std::shared_ptr<Incoming> start(transport::Engine& engine, const transport::LinkPtr& link, uint64_t sequence,
                                         void* data, size_t size, size_t chunk);
  // In-process, or on one node: the native runtime or the proxy writes the data itself; only the
  // status comes (complete()). `taker`: the connection whose control frames (the status among
  // them) the thread in wait() takes itself while it polls, or null.
  static std::shared_ptr<Incoming> status_only(Connection* taker = nullptr);
  void complete(cl_int status);
  // Waits for the data; the device's status of the read, or peer_lost_status.
  cl_int wait() const;
  bool arrived() const;
  // A step the data needs before the application may see it (unpacking a rectangle): run once,
  // by the first thread that sees the data arrive. Set before the read is shared.
  void finish_with(std::function<void()> finish) { finish_ = std::move(finish); }

 private:
  void finish() const;

  std::function<void()> finish_;
  Connection* taker_ = nullptr;
  mutable std::once_flag finished_;
  std::shared_ptr<transport::Transfer> chunks_;
  int32_t device_status_ = CL_SUCCESS;
  transport::Completion trailer_;
};

// A connection either to a proxy over MPI, or to the in-process session of this process's
// own devices (transport/in_process.hpp): the same frames, run in the calling thread.
class Connection final : transport::InProcessClient {
 public:
  Connection(Cluster& cluster, transport::Engine& engine, protocol::ProxyRecord record);
  // In-process; `backend` outlives the connection.
  Connection(Cluster& cluster, transport::Engine& engine, protocol::ProxyRecord record,
             transport::InProcessBackend& backend);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const protocol::ProxyRecord& record() const { return record_; }
  // False once the proxy is known to be gone or unreachable.
  bool available() const { return !lost_.load(); }
  // Connects on first use; ClError(CL_DEVICE_NOT_AVAILABLE) when the proxy cannot be reached
  // or is gone (what a new context on its devices must answer).
  void ensure_connected();
  protocol::ObjectId new_id() { return next_id_.fetch_add(1); }
  // Whether this connection will offer its proxy a session without MPI (a proxy of this node,
  // control frames and data allowed through memory); the proxy may still turn it down.
  bool may_connect_without_mpi() const;
  // How bulk data moves to and from this proxy (fixed at the handshake).
  transport::DataPath data_path() const { return data_path_; }
  // Whether requests name the application's memory by address instead of sending its data.
  bool moves_by_memory() const { return transport::moves_by_memory(data_path_); }
  bool in_process() const { return in_process_ != nullptr; }
  // The data path's name, or "" before the connection is made.
  const char* data_path_name() const { return connected_ ? transport::data_path_name(data_path_) : ""; }

  // Sends a request (and `bulk`, its data) and waits for the reply. A reply with an error
  // status throws ClError with that status, a lost proxy with peer_lost_status (calls on
  // objects of a proxy that went away). `sequence` receives the request's number.
  template <class M>
  typename M::Reply call(const typename M::Request& request, std::span<const std::byte> bulk = {},
                         uint64_t* sequence = nullptr);
  // Sends a request and returns; `done` runs on the MPI progress thread when the reply
  // arrives (status CL_SUCCESS and the reply) or the proxy is lost (peer_lost_status): it
  // must only hand the result on. `bulk` is sent after the request and must stay valid
  // until the reply.
  template <class M>
  void call_later(const typename M::Request& request, std::function<void(cl_int, const typename M::Reply&)> done,
                  std::span<const std::byte> bulk = {});
  // In-process only: runs a blocking transfer's request (a read, write or map that waits for
  // its command's end) and returns the status that ends its data, which comes, like the reply
  // (given in `reply` if not null), in this thread before the request's run returns. A reply
  // with an error throws as call().
  template <class M>
  cl_int call_blocking_transfer(const typename M::Request& request, typename M::Reply* reply = nullptr);
  // Sends a request that has no reply.
  template <class M>
  void post(const typename M::Request& request);
  // Sends a request that the proxy answers only if it fails (protocol::answered_only_on_failure),
  // with no pending reply: such a failure counts in detached_failures(). Returns its sequence.
  // In-process the request runs now and its failure throws as call()'s.
  template <class M>
  uint64_t send_detached(const typename M::Request& request);
  // How many requests sent by send_detached() the proxy has refused so far.
  uint64_t detached_failures() const { return detached_failures_.load(std::memory_order_acquire); }
  // Receives the bulk data of request `sequence` into `data` (on the memory path the
  // proxy writes it there itself; only the status comes).
  std::shared_ptr<Incoming> receive(uint64_t sequence, void* data, size_t size);

  // Requests sent over this connection (CL_PLATFORM_MESSAGES_SENT_HIVECL sums them): each takes
  // the next sequence number (a Hello offered with the watchdog's admission too), so no count of
  // its own is kept on the way.
  uint64_t requests_sent() const { return next_sequence_.load(std::memory_order_relaxed) - 1; }

  // Says goodbye (waiting a little) and frees the link: the process is exiting.
  void shutdown();

  // Through a shared control channel: polls until `arrived()`, up to longest_busy_poll, the
  // calling thread taking the frames that come meanwhile itself (on_control: no application
  // code runs), what it waits for among them, without the hand-over from the channel's reader.
  // Then the caller waits as it would have (the reader hands frames on).
  template <class Arrived>
  void take_frames_until(const Arrived& arrived);

 private:
  struct PendingReply {
    virtual ~PendingReply() = default;
    // In-process: keeps a copy of the reply handed over, if it is this message's Reply.
    virtual bool take(protocol::Opcode opcode, const void* reply) = 0;
    transport::Completion arrived;
    protocol::FrameHeader header;
    protocol::Bytes frame;  // over MPI
    bool in_memory = false;  // in-process: the reply is the one taken
    bool polled = false;     // the MPI engine polls the link for it (Link::expect)
    std::function<void(PendingReply&)> on_arrival;  // call_later's; also when the proxy is lost
  };
  template <class M>
  struct PendingReplyOf final : PendingReply {
    bool take(protocol::Opcode opcode, const void* taken) override {
      if (opcode != M::opcode) return false;
      reply = *static_cast<const typename M::Reply*>(taken);
      return true;
    }
    typename M::Reply reply;
  };
  // In-process, a request run by call() gets its reply, and a blocking transfer its status,
  // in the running thread (only call_later's WatchEvent answers from a native callback's):
  // they are handed to this record of the thread's running call, with no pending entry to
  // allocate, register and look up (about a third of an in-process call's own cost).
  struct RunningCall {
    const Connection* connection;
    uint64_t sequence;
    PendingReply* reply;
    cl_int* status;  // null: a status goes through statuses_
    bool status_arrived = false;
    RunningCall* outer;  // a call the thread was already running, if any
  };
  static inline thread_local RunningCall* running_ = nullptr;
  // Runs `request` in-process as call() and call_blocking_transfer() do; `status` as RunningCall's.
  // `answered_on_failure`: no reply comes unless it fails (send_detached()).
  template <class M>
  typename M::Reply run_in_process(const typename M::Request& request, std::span<const std::byte> bulk,
                                   uint64_t* sequence, cl_int* status, bool answered_on_failure = false);
  // The running call of this thread that request `sequence` belongs to, or null.
  RunningCall* running_call(uint64_t sequence) const;
  // The reply of an arrived PendingReplyOf<M>; ClError with its status (or peer_lost_status).
  template <class M>
  static typename M::Reply decode_reply(const PendingReply& pending);

  void connect();
  // A control channel offered to a proxy of this node (its reader already listening) with a Hello
  // sent in the watchdog's admission, and that Hello's reply.
  struct Offer {
    std::unique_ptr<transport::ControlChannel> channel;  // null: none to offer
    std::shared_ptr<PendingReplyOf<protocol::Hello>> pending = std::make_shared<PendingReplyOf<protocol::Hello>>();
    uint64_t sequence = 0;  // the Hello's, if sent with the admission
  };
  // A new channel to offer, if any, its Hello's reply expected.
  Offer make_offer();
  // The Hello of `offer` goes another way, or not at all: its reply is no longer expected.
  void forget_reply(const Offer& offer);
  // Sends the Hello with the watchdog's `token` (null: the watchdog took it), waits for its reply
  // (`offer`'s) and takes what it says, `offer`'s channel becoming the control channel if the
  // proxy took it; CL_SUCCESS or the error that refused the connection.
  cl_int greet(const protocol::Bytes* token, Offer& offer);
  // Connects over MPI in `watchdog`'s turn and listens to the link; null, or why it failed.
  const char* connect_over_mpi(const transport::WatchdogConnection& watchdog);
  // `offered`: the shared-memory control channel offered to a proxy of this node, or null.
  // `proof`: what the watchdog connection gave this client alone (its token, or the challenge's
  // nonce), held in probe_ for the proxy to read back (proxy/data_path.hpp says why).
  protocol::Hello::Request hello(const protocol::Bytes& watchdog_token, const protocol::Bytes& proof,
                                 const transport::ControlChannel* offered);
  // Bulk data goes over MPI: a session without MPI (whose data the proxy reads from this
  // process's memory) refuses a request that would send some, with CL_INVALID_OPERATION.
  void check_bulk_has_a_way(std::span<const std::byte> bulk) const;
  // The data_path setting.
  transport::DataPathChoice data_path_choice() const;
  // Whether the proxy is on this node and the setting lets it reach this process's memory.
  bool may_share_memory() const;
  void accept_hello_reply(const protocol::Hello::Reply& reply);
  // Runs the request in-process, with `bulk`, or sends it to the proxy (call() sends `bulk` after).
  template <class M>
  uint64_t send_request(const typename M::Request& request, const std::shared_ptr<PendingReply>& pending,
                        std::span<const std::byte> bulk = {});
  // The request's frame for the proxy; ClError when it is over the proxy's size limit.
  protocol::Bytes request_frame(protocol::Opcode opcode, uint64_t sequence,
                                const std::function<void(protocol::Writer&)>& encode_request) const;
  // Where `pending` waits for request `sequence`'s reply.
  void expect_reply(uint64_t sequence, const std::shared_ptr<PendingReply>& pending);
  // Waits for `pending`'s reply, taking frames meanwhile (take_frames_until).
  void await_reply(PendingReply& pending);
  // The pending reply of request `sequence`, taken away; null if none.
  std::shared_ptr<PendingReply> take_pending(uint64_t sequence);
  void on_control(protocol::Bytes&& frame);
  // Whether this connection has sent request `sequence` (its number was given out).
  bool was_requested(uint64_t sequence) const;
  void note_detached_failure(const protocol::FrameHeader& header);
  void print_output(protocol::Reader& reader) const;
  void on_reply(protocol::Opcode opcode, uint64_t sequence, cl_int status, const void* reply) override;
  void on_status(uint64_t sequence, cl_int status) override;
  std::shared_ptr<Incoming> take_status(uint64_t sequence);
  void lose(const char* why, log::Level level = log::Level::warn);

  Cluster& cluster_;
  transport::Engine& engine_;
  size_t chunk_bytes_;  // the proxy's, from Hello
  uint64_t max_message_bytes_ = UINT64_MAX;  // the proxy's, from Hello: larger requests are refused
  transport::DataPath data_path_ = transport::DataPath::mpi;
  protocol::ProxyRecord record_;
  std::mutex connect_mutex_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> leaving_{false};
  std::atomic<uint32_t> session_{0};  // the proxy's number for this client, for the log
  transport::LinkPtr link_;
  std::atomic<uint64_t> next_sequence_{1};
  std::atomic<protocol::ObjectId> next_id_{protocol::first_session_id};
  std::mutex pending_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<PendingReply>> pending_;
  std::atomic<size_t> replies_due_{0};  // pending_.size(), read by the control channel's reader
  std::atomic<size_t> callers_taking_{0};  // threads in take_frames_until()
  std::atomic<uint64_t> detached_failures_{0};
  transport::InProcessBackend* in_process_ = nullptr;
  // In-process transfers whose status came before receive() or receive() before the status.
  std::mutex statuses_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<Incoming>> statuses_;
  protocol::Bytes probe_;  // the Hello's probe, in this process's memory (hello())
  // Same node: control frames both ways through shared memory, once the proxy took it at Hello;
  // then transfer statuses come as frames too. Set before connected_, never reset; last, so that
  // its reader stops before the members it uses go.
  std::unique_ptr<transport::ControlChannel> control_;
};

template <class M>
typename M::Reply Connection::call(const typename M::Request& request, std::span<const std::byte> bulk,
                                   uint64_t* sequence) {
  static_assert(M::has_reply);
  if (!connected_) ensure_connected();
  if (lost_) throw ClError{peer_lost_status};
  if (in_process_) return run_in_process<M>(request, bulk, sequence, nullptr);
  check_bulk_has_a_way(bulk);
  auto pending = std::make_shared<PendingReplyOf<M>>();
  const uint64_t number = send_request<M>(request, pending);
  if (sequence) *sequence = number;
  if (!bulk.empty()) {
    auto sent = transport::Transfer::send(engine_, link_, transport::data_tag(number), bulk.data(), bulk.size(),
                                          chunk_bytes_);
    if (sent->wait() != transport::OpStatus::done) throw ClError{peer_lost_status};
  }
  await_reply(*pending);
  return decode_reply<M>(*pending);
}

template <class M>
cl_int Connection::call_blocking_transfer(const typename M::Request& request, typename M::Reply* reply) {
  if (lost_) throw ClError{peer_lost_status};
  cl_int status = CL_SUCCESS;
  auto arrived = run_in_process<M>(request, {}, nullptr, &status);
  if (reply) *reply = std::move(arrived);
  return status;
}

template <class M>
typename M::Reply Connection::run_in_process(const typename M::Request& request, std::span<const std::byte> bulk,
                                             uint64_t* sequence, cl_int* status, bool answered_on_failure) {
  PendingReplyOf<M> pending;
  RunningCall running{.connection = this, .sequence = next_sequence_++, .reply = &pending, .status = status,
                      .outer = running_};
  if (sequence) *sequence = running.sequence;
  {
    struct Running {  // the thread's record of its call, also if run() throws
      explicit Running(RunningCall& call) { running_ = &call; }
      ~Running() { running_ = running_->outer; }
    } scope(running);
    in_process_->run(M::opcode, running.sequence, &request, bulk);
  }
  if (answered_on_failure && pending.arrived.status() == transport::OpStatus::pending) return {};
  // No answer: the session is gone (the process is exiting).
  if (pending.arrived.status() == transport::OpStatus::pending || (status && !running.status_arrived &&
                                                                    pending.header.status == CL_SUCCESS))
    throw ClError{peer_lost_status};
  return decode_reply<M>(pending);
}

template <class M>
typename M::Reply Connection::decode_reply(const PendingReply& pending) {
  if (pending.arrived.status() != transport::OpStatus::done) throw ClError{peer_lost_status};
  if (pending.header.status != CL_SUCCESS) throw ClError{pending.header.status};
  if (pending.in_memory) return static_cast<const PendingReplyOf<M>&>(pending).reply;
  typename M::Reply reply;
  protocol::Reader reader(pending.frame);
  protocol::FrameHeader header;
  if (!protocol::decode(reader, header) || !protocol::decode(reader, reply) || !reader.at_end())
    throw ClError{CL_OUT_OF_RESOURCES};
  return reply;
}

template <class M>
void Connection::call_later(const typename M::Request& request,
                            std::function<void(cl_int, const typename M::Reply&)> done,
                            std::span<const std::byte> bulk) {
  static_assert(M::has_reply);
  if (!connected_) ensure_connected();
  if (lost_) throw ClError{peer_lost_status};
  if (!in_process_) check_bulk_has_a_way(bulk);
  auto pending = std::make_shared<PendingReplyOf<M>>();
  pending->on_arrival = [done = std::move(done)](PendingReply& arrived) {
    try {
      done(CL_SUCCESS, decode_reply<M>(arrived));
    } catch (const ClError& error) {
      done(error.code, {});
    }
  };
  const uint64_t number = send_request<M>(request, pending, in_process_ ? bulk : std::span<const std::byte>{});
  if (!bulk.empty() && !in_process_)  // its failure is the proxy's loss, which `done` hears of
    transport::Transfer::send(engine_, link_, transport::data_tag(number), bulk.data(), bulk.size(), chunk_bytes_);
}

template <class M>
void Connection::post(const typename M::Request& request) {
  static_assert(!M::has_reply);
  if (!connected_ || lost_) return;
  send_request<M>(request, nullptr);
}

template <class M>
uint64_t Connection::send_detached(const typename M::Request& request) {
  static_assert(M::has_reply);
  if (!connected_) ensure_connected();
  if (lost_) throw ClError{peer_lost_status};
  if (in_process_) {
    uint64_t sequence = 0;
    run_in_process<M>(request, {}, &sequence, nullptr, true);
    return sequence;
  }
  return send_request<M>(request, nullptr);
}

template <class M>
uint64_t Connection::send_request(const typename M::Request& request, const std::shared_ptr<PendingReply>& pending,
                                  std::span<const std::byte> bulk) {
  const uint64_t sequence = next_sequence_++;
  if (in_process_) {
    if (pending) expect_reply(sequence, pending);
    in_process_->run(M::opcode, sequence, &request, bulk);  // the reply, if any, has come through on_reply
  } else {
    protocol::Bytes frame =
        request_frame(M::opcode, sequence, [&](protocol::Writer& writer) { protocol::encode(writer, request); });
    if (pending) expect_reply(sequence, pending);
    if (!control_) {
      engine_.send(link_, transport::control_tag, std::move(frame));
    } else if (!control_->send(frame)) {
      lose("its control channel closed");
    }
  }
  return sequence;
}

}  // namespace hivecl::icd
