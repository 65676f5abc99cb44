#include "icd/connection.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "icd/cluster.hpp"
#include "log.hpp"
#include "node.hpp"
#include "transport/polling.hpp"
#include "transport/rendezvous.hpp"
#include "transport/secret.hpp"
#include "transport/watchdog.hpp"
#include "write_all.hpp"

namespace hivecl::icd {

using namespace protocol;
using transport::OpStatus;

std::shared_ptr<Incoming> Incoming::start(transport::Engine& engine, const transport::LinkPtr& link,
                                          uint64_t sequence, void* data, size_t size, size_t chunk) {
  std::shared_ptr<Incoming> incoming(new Incoming);
  const int tag = transport::data_tag(sequence);
  incoming->chunks_ = transport::Transfer::receive(engine, link, tag, data, size, chunk);
  // Posted after the chunks on the same tag, so it matches the status the proxy sends last; it
  // ends the read only after the control frames sent before it (what the read's kernels printed).
  engine.receive_after_frames(link, tag, &incoming->device_status_, sizeof incoming->device_status_,
                              [incoming](OpStatus status, Bytes&&) { incoming->trailer_.complete(status); });
  return incoming;
}

std::shared_ptr<Incoming> Incoming::status_only(Connection* taker) {
  std::shared_ptr<Incoming> incoming(new Incoming);
  incoming->taker_ = taker;
  return incoming;
}

void Incoming::complete(cl_int status) {
  device_status_ = status;
  trailer_.complete(OpStatus::done);
}

cl_int Incoming::wait() const {
  if (taker_) taker_->take_frames_until([this] { return trailer_.status() != OpStatus::pending; });
  if ((chunks_ && chunks_->wait() != OpStatus::done) || trailer_.wait() != OpStatus::done) return peer_lost_status;
  if (device_status_ < 0) return device_status_;
  finish();
  return CL_SUCCESS;
}

bool Incoming::arrived() const {
  const OpStatus chunks = chunks_ ? chunks_->status() : OpStatus::done;
  if (chunks == OpStatus::pending || trailer_.status() == OpStatus::pending) return false;
  if (chunks == OpStatus::done && trailer_.status() == OpStatus::done && device_status_ >= 0) finish();
  return true;
}

void Incoming::finish() const {
  std::call_once(finished_, [this] {
    if (finish_) finish_();
  });
}

Connection::Connection(Cluster& cluster, transport::Engine& engine, ProxyRecord record)
    : cluster_(cluster), engine_(engine), chunk_bytes_(cluster.config().chunk_bytes), record_(std::move(record)) {}

Connection::Connection(Cluster& cluster, transport::Engine& engine, ProxyRecord record,
                       transport::InProcessBackend& backend)
    : Connection(cluster, engine, std::move(record)) {
  in_process_ = &backend;
  data_path_ = transport::DataPath::in_process;
  backend.open(*this);
  connected_ = true;
}

transport::DataPathChoice Connection::data_path_choice() const {
  transport::DataPathChoice choice = transport::DataPathChoice::automatic;
  transport::parse_data_path_choice(cluster_.config().data_path, choice);
  return choice;
}

bool Connection::may_share_memory() const {
  return record_.node == hivecl::node_name() && data_path_choice() != transport::DataPathChoice::mpi;
}

bool Connection::may_connect_without_mpi() const {
  return may_share_memory() && cluster_.config().control_path != "mpi";
}

Connection::Offer Connection::make_offer() {
  const Config& config = cluster_.config();
  Offer offer;
  if (!may_connect_without_mpi()) return offer;
  offer.channel = transport::ControlChannel::create();
  if (!offer.channel) return offer;
  offer.channel->listen([this](Bytes&& frame) { on_control(std::move(frame)); },
                        [this] { lose("its shared control channel broke"); }, config.max_message_bytes,
                        config.poll_spin, [this] { return replies_due_.load(std::memory_order_relaxed) != 0; },
                        [this] { return callers_taking_.load(std::memory_order_acquire) != 0; });
  offer.sequence = next_sequence_++;
  expect_reply(offer.sequence, offer.pending);
  return offer;
}

void Connection::forget_reply(const Offer& offer) {
  if (offer.channel) take_pending(offer.sequence);
}

template <class Arrived>
void Connection::take_frames_until(const Arrived& arrived) {
  transport::ControlChannel* const channel = control_.get();
  if (!channel) return;
  callers_taking_.fetch_add(1, std::memory_order_acq_rel);
  transport::poll_for([&] { return arrived() || (channel->try_take(), arrived()); }, transport::longest_busy_poll);
  callers_taking_.fetch_sub(1, std::memory_order_acq_rel);  // the reader hands frames on from now on
}

void Connection::await_reply(PendingReply& pending) {
  take_frames_until([&] { return pending.arrived.status() != OpStatus::pending; });
  pending.arrived.wait();
}

Hello::Request Connection::hello(const Bytes& watchdog_token, const Bytes& proof,
                                 const transport::ControlChannel* offered) {
  if (may_share_memory()) transport::grant_peer_access(record_.pid);
  probe_ = proof;  // read back by the proxy, from this process's memory
  return {.version = protocol_version, .watchdog_token = watchdog_token, .host = hivecl::node_name(),
          .pid = static_cast<int32_t>(::getpid()), .boot_id = transport::boot_id(),
          .data_path = static_cast<uint8_t>(data_path_choice()),
          .probe_address = reinterpret_cast<uint64_t>(probe_.data()),
          .probe = probe_,
          .control_fd = offered ? offered->segment().fd() : -1,
          .control_inode = offered ? offered->segment().inode() : 0,
          .control_bytes = offered ? offered->segment().size() : 0};
}

void Connection::ensure_connected() {
  if (lost_) throw ClError{CL_DEVICE_NOT_AVAILABLE};
  std::lock_guard lock(connect_mutex_);
  if (connected_) return;
  if (lost_) throw ClError{CL_DEVICE_NOT_AVAILABLE};
  connect();
}

void Connection::connect() {
  const std::string proxy = record_.node + ":" + std::to_string(record_.pid);
  const auto fail = [&](const std::string& why) {
    log::error("proxy ", proxy, ": ", why);
    lose("could not connect");
    throw ClError{CL_DEVICE_NOT_AVAILABLE};
  };
  const Config& config = cluster_.config();
  Bytes secret;
  if (!config.secret_file.empty()) {
    std::string why;
    auto loaded = transport::load_secret(config.secret_file, why);
    if (!loaded) fail(why);
    secret = std::move(*loaded);
  }
  cluster_.start_watching();
  Offer offer = make_offer();  // the reply to Hello may come through its channel already
  // MPI before the watchdog's turn where it will be needed, so that the turn is not held meanwhile.
  if (!offer.channel && !cluster_.wait_mpi()) fail("MPI could not be initialised");
  // Offered to a proxy of this node with the watchdog's admission, the Hello lets it start the
  // session at once, without MPI (transport/watchdog.hpp); its probe is the challenge's nonce.
  transport::WatchdogConnection::HelloFor hello_for;
  bool offered = false;  // a Hello went with an earlier attempt (here: hello_for outlives the block below)
  if (offer.channel) {
    hello_for = [&](const Bytes& nonce) {
      // An attempt given up (unanswered in time) may yet have started a session on the channel
      // it offered, whose reply would bear this Hello's sequence: each attempt offers its own.
      if (std::exchange(offered, true)) {
        forget_reply(offer);
        offer = make_offer();
        if (!offer.channel) return Bytes{};  // then the admission is for a turn over MPI
      }
      return request_frame(Opcode::Hello, offer.sequence,
                           [&](Writer& writer) { encode(writer, hello({}, nonce, offer.channel.get())); });
    };
  }
  // The watchdog first: connecting over MPI to a port nobody serves never returns.
  auto watchdog = transport::WatchdogConnection::open(record_.watchdog_hosts, record_.watchdog_port,
                                                      config.connect_timeout, config.peer_timeout, secret, hello_for);
  if (!watchdog) fail("its watchdog does not answer (is it running?) or refused this client");
  const bool without_mpi = watchdog->session_started();
  if (!without_mpi) {
    forget_reply(offer);  // the proxy connects this client over MPI instead
    if (const char* why = connect_over_mpi(*watchdog)) fail(why);
  }
  const Bytes token = watchdog->token();
  // After Goodbye the proxy closes it on purpose: its reply, and the kernels' text before it, are
  // still to be read (shutdown waits for them, a second at most).
  cluster_.monitor().watch(std::move(*watchdog), [this] {
    if (!leaving_) lose("its watchdog connection closed");
  });
  const cl_int status = greet(without_mpi ? nullptr : &token, offer);
  if (status != CL_SUCCESS) fail("it refused the connection (status " + std::to_string(status) + ")");
  connected_ = true;
  log::info("connected to proxy ", proxy, ", session ", session_, without_mpi ? " (without MPI)" : "", "; data path ",
            transport::data_path_name(data_path_), ", chunks of ", chunk_bytes_, " bytes; control frames through ",
            control_ ? "shared memory" : "MPI");
}

cl_int Connection::greet(const Bytes* token, Offer& offer) {
  try {
    if (token) send_request<Hello>(hello(*token, *token, offer.channel.get()), offer.pending);
    offer.pending->arrived.wait();
    const Hello::Reply reply = decode_reply<Hello>(*offer.pending);
    accept_hello_reply(reply);
    // Without MPI, frames and data have no other way than the channel and the memory path.
    if (!token && (!reply.shared_control || !moves_by_memory())) return CL_INVALID_OPERATION;
    if (reply.shared_control && offer.channel) {
      std::lock_guard lock(pending_mutex_);  // lose() closes it
      control_ = std::move(offer.channel);
    }
    return CL_SUCCESS;
  } catch (const ClError& error) {
    return error.code;
  }
}

const char* Connection::connect_over_mpi(const transport::WatchdogConnection& watchdog) {
  if (!cluster_.wait_mpi()) return "MPI could not be initialised";
  // As long as connects that waited their turn took under load (10 s and more), several times over.
  MPI_Comm comm = cluster_.connect(watchdog, cluster_.config().connect_timeout * 6);
  if (comm == MPI_COMM_NULL) return "MPI_Comm_connect failed, or was given up (the proxy died or did not accept)";
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  link_ = std::make_shared<transport::Link>(comm);
  engine_.listen(link_, transport::control_tag, false, [this](Bytes&& frame) { on_control(std::move(frame)); });
  return nullptr;
}

void Connection::check_bulk_has_a_way(std::span<const std::byte> bulk) const {
  if (bulk.empty() || link_) return;
  log::warn("a request with ", bulk.size(), " bytes of data to send, which only MPI carries, to proxy ", record_.node,
            ", whose session has no MPI");
  throw ClError{CL_INVALID_OPERATION};
}

void Connection::accept_hello_reply(const Hello::Reply& reply) {
  if (reply.chunk_bytes == 0 || reply.data_path > static_cast<uint8_t>(transport::DataPath::memory))
    throw ClError{CL_INVALID_OPERATION};
  session_ = reply.session;
  data_path_ = static_cast<transport::DataPath>(reply.data_path);
  chunk_bytes_ = reply.chunk_bytes;
  max_message_bytes_ = reply.max_message_bytes;
}

Bytes Connection::request_frame(Opcode opcode, uint64_t sequence,
                                const std::function<void(Writer&)>& encode_request) const {
  Bytes frame;
  Writer writer(frame);
  encode(writer, FrameHeader{.opcode = opcode, .kind = FrameKind::request, .sequence = sequence});
  encode_request(writer);
  // The proxy would drop it unanswered (its max_message_bytes): the call fails here instead.
  if (frame.size() > max_message_bytes_) {
    log::warn("a request of ", frame.size(), " bytes (opcode ", static_cast<unsigned>(opcode), ") is over proxy ",
              record_.node, "'s max_message_bytes (", max_message_bytes_, ")");
    throw ClError{CL_OUT_OF_RESOURCES};
  }
  return frame;
}

void Connection::expect_reply(uint64_t sequence, const std::shared_ptr<PendingReply>& pending) {
  std::lock_guard lock(pending_mutex_);
  if (lost_) throw ClError{peer_lost_status};
  pending_.emplace(sequence, pending);
  replies_due_.store(pending_.size(), std::memory_order_relaxed);
  pending->polled = link_ && !control_;  // a shared control channel's reader needs no polling of MPI
  if (pending->polled) link_->expect(1);
}

std::shared_ptr<Connection::PendingReply> Connection::take_pending(uint64_t sequence) {
  std::lock_guard lock(pending_mutex_);
  const auto it = pending_.find(sequence);
  if (it == pending_.end()) return nullptr;
  auto pending = std::move(it->second);
  pending_.erase(it);
  replies_due_.store(pending_.size(), std::memory_order_relaxed);
  if (pending->polled) link_->expect(-1);
  return pending;
}

// Engine thread or the control channel's reader: a reply or a transfer's status arrived.
void Connection::on_control(Bytes&& frame) {
  Reader reader(frame);
  FrameHeader header;
  if (!decode(reader, header) || header.magic != frame_magic ||
      (header.kind != FrameKind::reply && header.kind != FrameKind::status && header.kind != FrameKind::statuses &&
       header.kind != FrameKind::output)) {
    log::warn("dropped a malformed frame from proxy ", record_.node);
    return;
  }
  if (header.kind == FrameKind::output) {
    print_output(reader);
    return;
  }
  // A status kept for a request never made would be kept for ever.
  const auto never_made = [this] {
    log::warn("dropped a frame from proxy ", record_.node, " about a request never made");
  };
  if (header.kind == FrameKind::statuses) {
    std::vector<uint64_t> sequences;
    if (!decode(reader, sequences)) {
      log::warn("dropped a malformed frame from proxy ", record_.node);
      return;
    }
    if (!std::all_of(sequences.begin(), sequences.end(), [this](uint64_t sequence) { return was_requested(sequence); }))
      return never_made();
    for (const uint64_t sequence : sequences) on_status(sequence, header.status);
    return;
  }
  if (!was_requested(header.sequence)) return never_made();
  if (header.kind == FrameKind::status) {
    on_status(header.sequence, header.status);
    return;
  }
  const auto pending = take_pending(header.sequence);
  if (!pending) {
    if (header.status != CL_SUCCESS) note_detached_failure(header);
    return;
  }
  pending->header = header;
  pending->frame = std::move(frame);
  pending->arrived.complete(OpStatus::done);
  if (pending->on_arrival) pending->on_arrival(*pending);
}

bool Connection::was_requested(uint64_t sequence) const {
  return sequence != 0 && sequence < next_sequence_.load(std::memory_order_relaxed);
}

// What kernels printed on the proxy's node goes to the application's standard output, before the
// frames that follow it (the reply that tells the application that those kernels ended). Written
// to the descriptor, as PoCL does: through stdio it would flush what the application itself has
// not yet flushed, into wherever the application points standard output to catch the kernels'.
void Connection::print_output(Reader& reader) const {
  KernelOutput output;
  if (!decode(reader, output)) {
    log::warn("dropped a malformed frame from proxy ", record_.node);
    return;
  }
  write_all(STDOUT_FILENO, output.text);
}

// A request sent without a pending reply failed (send_detached): its event already reports it.
void Connection::note_detached_failure(const FrameHeader& header) {
  detached_failures_.fetch_add(1, std::memory_order_release);
  log::warn("a request of opcode ", static_cast<unsigned>(header.opcode), " sent without waiting failed on proxy ",
            record_.node, " (status ", header.status, "); its event reports the failure");
}

Connection::RunningCall* Connection::running_call(uint64_t sequence) const {
  for (RunningCall* running = running_; running; running = running->outer)
    if (running->connection == this && running->sequence == sequence) return running;
  return nullptr;
}

// In-process: a reply handed over, in the thread that ran the request or a native callback's.
void Connection::on_reply(Opcode opcode, uint64_t sequence, cl_int status, const void* reply) {
  RunningCall* running = running_call(sequence);
  const auto pending = running ? nullptr : take_pending(sequence);
  PendingReply* const to = running ? running->reply : pending.get();
  if (!to) return;
  if (status == CL_SUCCESS && !to->take(opcode, reply)) {
    log::error("in-process reply of opcode ", static_cast<unsigned>(opcode), " to another message's request");
    status = CL_OUT_OF_RESOURCES;
  }
  to->header = FrameHeader{.opcode = opcode, .kind = FrameKind::reply, .sequence = sequence, .status = status};
  to->in_memory = true;
  to->arrived.complete(OpStatus::done);
  if (to->on_arrival) to->on_arrival(*to);
}

std::shared_ptr<Incoming> Connection::receive(uint64_t sequence, void* data, size_t size) {
  // The status comes as a frame in-process and through a shared control channel, else on the data tag.
  if (!in_process_ && !control_)
    return Incoming::start(engine_, link_, sequence, data, moves_by_memory() ? 0 : size, chunk_bytes_);
  return take_status(sequence);
}

// Whichever of the status and receive() comes second takes the entry away.
std::shared_ptr<Incoming> Connection::take_status(uint64_t sequence) {
  std::lock_guard lock(statuses_mutex_);
  const auto [it, fresh] = statuses_.try_emplace(sequence);
  if (!fresh) {
    auto incoming = std::move(it->second);
    statuses_.erase(it);
    return incoming;
  }
  it->second = Incoming::status_only(control_ ? this : nullptr);
  if (lost_) it->second->complete(peer_lost_status);  // lose() has failed those before it
  return it->second;
}

void Connection::on_status(uint64_t sequence, cl_int status) {
  if (RunningCall* running = running_call(sequence); running && running->status) {
    *running->status = status;
    running->status_arrived = true;
    return;
  }
  take_status(sequence)->complete(status);
}

void Connection::lose(const char* why, log::Level level) {
  if (lost_.exchange(true)) return;
  if (leaving_) level = log::Level::debug;
  log::at(level, "proxy ", record_.node, ":", record_.pid, " (session ", session_, ") is gone (", why,
          "); its devices are no longer available");
  std::unordered_map<uint64_t, std::shared_ptr<PendingReply>> abandoned;
  transport::ControlChannel* control = nullptr;
  {
    std::lock_guard lock(pending_mutex_);
    abandoned.swap(pending_);
    replies_due_.store(0, std::memory_order_relaxed);
    for (const auto& [sequence, pending] : abandoned)
      if (pending->polled) link_->expect(-1);
    control = control_.get();
  }
  if (control) control->close();  // its reader stops soon (joined when the connection goes)
  std::unordered_map<uint64_t, std::shared_ptr<Incoming>> stranded;  // statuses that will not come now
  {
    std::lock_guard lock(statuses_mutex_);
    stranded.swap(statuses_);
  }
  for (auto& [sequence, incoming] : stranded)
    if (!incoming->arrived()) incoming->complete(peer_lost_status);
  for (auto& [sequence, pending] : abandoned) {
    pending->arrived.complete(OpStatus::cancelled);
    if (pending->on_arrival) pending->on_arrival(*pending);
  }
  if (link_) engine_.forget(link_);
}

void Connection::shutdown() {
  if (!connected_ || lost_) return;
  if (in_process_) {
    leaving_ = true;  // the session ends with the process (transport/in_process.hpp)
    lose("the application is exiting", log::Level::debug);
    return;
  }
  leaving_ = true;  // the proxy closes the watchdog connection after Goodbye: no news then
  try {
    auto pending = std::make_shared<PendingReplyOf<Goodbye>>();
    send_request<Goodbye>(Goodbye::Request{}, pending);
    pending->arrived.wait_for(std::chrono::seconds(1));
  } catch (const ClError&) {
  }
  lose("the application is exiting", log::Level::debug);
}

}  // namespace hivecl::icd
