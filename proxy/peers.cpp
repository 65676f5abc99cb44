#include "proxy/peers.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "log.hpp"
#include "node.hpp"
#include "proxy/executors.hpp"
#include "proxy/server.hpp"
#include "proxy/staged.hpp"
#include "transport/peer_memory.hpp"
#include "transport/rendezvous.hpp"
#include "transport/secret.hpp"

namespace hivecl::proxy {

using namespace protocol;
using transport::OpStatus;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A memory object moved between proxies seen as a packed box (staged.hpp): a buffer as one row
// of bytes, an image as its pixels row after row and layer after layer (how the client lays out
// an image it moves). A range of it is cut into whole pixels, at most five boxes (box_piece).
struct PackedObject {
  cl_mem mem = nullptr;
  bool image = false;
  Extent extent{};
  size_t element = 1;
  uint64_t bytes() const { return uint64_t{extent[0]} * element * extent[1] * extent[2]; }
};

PackedObject packed_object(cl_mem mem) {
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, nullptr));
  if (type == CL_MEM_OBJECT_BUFFER) {
    size_t size = 0;
    check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr));
    return {.mem = mem, .extent = {size, 1, 1}};
  }
  const auto [extent, element] = image_layout(mem);
  return {.mem = mem, .image = true, .extent = extent, .element = element};
}

// CL_INVALID_VALUE unless [offset, offset + size) lies inside `object` on whole pixels.
void check_packed_range(const PackedObject& object, uint64_t offset, uint64_t size) {
  if (offset > object.bytes() || size > object.bytes() - offset) throw ClError{CL_INVALID_VALUE};
  if (offset % object.element || size % object.element) throw ClError{CL_INVALID_VALUE};
}

// CL_INVALID_OPERATION unless chunks of `chunk` bytes (a move's, as it goes over MPI) end on
// whole pixels of `object`.
void check_chunks(const PackedObject& object, uint64_t chunk) {
  if (chunk % object.element) throw ClError{CL_INVALID_OPERATION};
}

// Reads (`write`: writes) [offset, offset + size) of `object` into (from) `host`, after `waits`;
// `event` ends once all of it has. A piece that fails is waited for with those enqueued before
// it, so that no command still uses `host` once this has failed.
cl_int enqueue_packed(bool write, cl_command_queue queue, const PackedObject& object, uint64_t offset, uint64_t size,
                      std::byte* host, const std::vector<cl_event>& waits, cl_event* event) {
  const auto wait_count = static_cast<cl_uint>(waits.size());
  const cl_event* wait_list = waits.empty() ? nullptr : waits.data();
  if (!object.image)
    return write ? clEnqueueWriteBuffer(queue, object.mem, CL_FALSE, offset, size, host, wait_count, wait_list, event)
                 : clEnqueueReadBuffer(queue, object.mem, CL_FALSE, offset, size, host, wait_count, wait_list, event);
  std::vector<cl_event> pieces;
  cl_int status = CL_SUCCESS;
  for (uint64_t at = offset; at < offset + size && status == CL_SUCCESS;) {
    const BoxPiece piece = box_piece(object.extent, object.element, at, offset + size - at);
    const size_t* origin = piece.origin.data();
    const size_t* region = piece.region.data();
    std::byte* data = host + (at - offset);
    cl_event done = nullptr;
    status = write ? clEnqueueWriteImage(queue, object.mem, CL_FALSE, origin, region, 0, 0, data, wait_count,
                                         wait_list, &done)
                   : clEnqueueReadImage(queue, object.mem, CL_FALSE, origin, region, 0, 0, data, wait_count,
                                        wait_list, &done);
    if (status == CL_SUCCESS) pieces.push_back(done);
    at += piece.bytes;
  }
  if (status == CL_SUCCESS && pieces.size() == 1) {
    *event = pieces.front();
    return CL_SUCCESS;
  }
  if (status == CL_SUCCESS)
    status = clEnqueueMarkerWithWaitList(queue, static_cast<cl_uint>(pieces.size()), pieces.data(), event);
  if (status != CL_SUCCESS && !pieces.empty()) clWaitForEvents(static_cast<cl_uint>(pieces.size()), pieces.data());
  for (cl_event piece : pieces) clReleaseEvent(piece);
  return status;
}

}  // namespace

// --- the receiving side's tickets ---------------------------------------------------------

PeerArrival::PeerArrival(uint32_t owner, cl_command_queue queue, cl_mem mem, uint64_t offset, uint64_t size,
                         cl_event landed)
    : owner(owner), queue(queue), mem(mem), offset(offset), size(size), landed_(landed) {
  if (queue) clRetainCommandQueue(queue);
  if (mem) clRetainMemObject(mem);
}

PeerArrival::~PeerArrival() {
  land(peer_lost_status);  // no data or status will come any more
  clReleaseEvent(landed_);
  if (queue) clReleaseCommandQueue(queue);
  if (mem) clReleaseMemObject(mem);
}

void PeerArrival::land(cl_int status) {
  if (set_.exchange(true)) return;
  clSetUserEventStatus(landed_, status < 0 ? status : CL_COMPLETE);
}

void PeerTickets::expect(const Bytes& ticket, std::shared_ptr<PeerArrival> arrival) {
  std::lock_guard lock(mutex_);
  if (!tickets_.emplace(key(ticket), std::move(arrival)).second) throw ClError{CL_INVALID_VALUE};
}

void PeerTickets::claim(const Bytes& ticket, uint32_t sender) {
  std::lock_guard lock(mutex_);
  const auto it = tickets_.find(key(ticket));
  if (it == tickets_.end() || it->second->claimed_by != 0) throw ClError{CL_INVALID_VALUE};
  it->second->claimed_by = sender;
}

std::shared_ptr<PeerArrival> PeerTickets::take(const Bytes& ticket, uint32_t sender) {
  std::lock_guard lock(mutex_);
  const auto it = tickets_.find(key(ticket));
  if (it == tickets_.end() || it->second->claimed_by != sender) throw ClError{CL_INVALID_VALUE};
  auto arrival = std::move(it->second);
  tickets_.erase(it);
  return arrival;
}

void PeerTickets::cancel(const Bytes& ticket, uint32_t owner, cl_int status) {
  std::shared_ptr<PeerArrival> arrival;
  {
    std::lock_guard lock(mutex_);
    const auto it = tickets_.find(key(ticket));
    if (it == tickets_.end() || it->second->owner != owner) return;
    arrival = std::move(it->second);
    tickets_.erase(it);
  }
  arrival->land(status < 0 ? status : CL_INVALID_OPERATION);
}

void PeerTickets::forget_session(uint32_t session) {
  std::vector<std::shared_ptr<PeerArrival>> gone;  // released outside the lock
  std::lock_guard lock(mutex_);
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second->owner == session || it->second->claimed_by == session) {
      gone.push_back(std::move(it->second));
      it = tickets_.erase(it);
    } else {
      ++it;
    }
  }
}

// --- the sending side's links ---------------------------------------------------------

uint64_t PeerLink::send_frame(Opcode opcode, const Bytes& body, std::shared_ptr<Pending> pending) {
  const uint64_t sequence = next_sequence_++;
  Bytes frame = to_bytes(FrameHeader{.opcode = opcode, .kind = FrameKind::request, .sequence = sequence});
  frame.insert(frame.end(), body.begin(), body.end());
  if (pending) {
    std::lock_guard lock(pending_mutex_);
    if (lost_) throw ClError{peer_lost_status};
    pending_.emplace(sequence, std::move(pending));
  }
  engine_.send(link_, transport::control_tag, std::move(frame));
  return sequence;
}

void PeerLink::send_data(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent) {
  engine_.send(link_, transport::data_tag(sequence), data, size, [sent = std::move(sent)](OpStatus, Bytes&&) { sent(); });
}

void PeerLink::send_status(uint64_t sequence, cl_int status) {
  Bytes bytes(sizeof status);
  std::memcpy(bytes.data(), &status, sizeof status);
  engine_.send(link_, transport::data_tag(sequence), std::move(bytes));
}

void PeerLink::on_reply(Bytes&& frame) {
  Reader reader(frame);
  FrameHeader header;
  if (!decode(reader, header) || header.magic != frame_magic || header.kind != FrameKind::reply) return;
  std::shared_ptr<Pending> pending;
  {
    std::lock_guard lock(pending_mutex_);
    const auto it = pending_.find(header.sequence);
    if (it != pending_.end()) {
      pending = std::move(it->second);
      pending_.erase(it);
    }
  }
  if (pending) {
    pending->frame = std::move(frame);
    pending->arrived.complete(OpStatus::done);
  } else if (header.status != CL_SUCCESS) {
    log::warn("proxy ", name_, " refused data sent to it (status ", header.status, ")");
  }
}

void PeerLink::lose() {
  if (lost_.exchange(true)) return;
  std::map<uint64_t, std::shared_ptr<Pending>> abandoned;
  {
    std::lock_guard lock(pending_mutex_);
    abandoned.swap(pending_);
  }
  for (auto& [sequence, pending] : abandoned) pending->arrived.complete(OpStatus::cancelled);
  engine_.forget(link_);
}

std::shared_ptr<PeerSend> PeerLink::exchange_last_send(const std::shared_ptr<PeerSend>& send) {
  std::lock_guard lock(last_send_mutex_);
  return std::exchange(last_send_, send).lock();
}

PeerLinks::~PeerLinks() { close(); }

std::shared_ptr<PeerLink> PeerLinks::to(const std::string& node, int32_t pid) {
  std::lock_guard lock(mutex_);
  auto& link = links_[{node, pid}];
  if (link && !link->lost()) return link;
  link.reset();
  for (const ProxyRecord& record : transport::discover_proxies(config_.cluster_dir))
    if (record.node == node && record.pid == pid) link = connect(record);
  if (!link) {
    log::warn("proxy ", node, ":", pid, " is not in the cluster: no data can be sent to it");
    throw ClError{peer_lost_status};
  }
  return link;
}

// As a client of another node connects (icd/connection.cpp): the watchdog first, then MPI, then Hello. The
// data moves over MPI whatever the node: same-node proxies are rare (one proxy serves every
// device of its node), and the memory path would need each proxy to let the other read it.
std::shared_ptr<PeerLink> PeerLinks::connect(const ProxyRecord& record) {
  const std::string name = record.node + ":" + std::to_string(record.pid);
  const auto fail = [&](const char* why) {
    log::warn("cannot connect to proxy ", name, ": ", why);
    throw ClError{peer_lost_status};
  };
  Bytes secret;
  if (!config_.secret_file.empty()) {
    std::string why;
    auto loaded = transport::load_secret(config_.secret_file, why);
    if (!loaded) fail(why.c_str());
    secret = std::move(*loaded);
  }
  auto watchdog = transport::WatchdogConnection::open(record.watchdog_hosts, record.watchdog_port,
                                                      config_.connect_timeout, config_.peer_timeout, secret);
  if (!watchdog) fail("its watchdog does not answer");
  if (connect_comm_ == MPI_COMM_NULL) {
    MPI_Comm_dup(MPI_COMM_SELF, &connect_comm_);
    MPI_Comm_set_errhandler(connect_comm_, MPI_ERRORS_RETURN);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Comm_connect(watchdog->mpi_port().c_str(), MPI_INFO_NULL, 0, connect_comm_, &comm) != MPI_SUCCESS)
    fail("MPI_Comm_connect failed");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  auto link = std::make_shared<PeerLink>(engine_, std::make_shared<transport::Link>(comm), name);
  const std::weak_ptr<PeerLink> weak = link;
  engine_.listen(link->link(), transport::control_tag, true, [weak](Bytes&& frame) {
    if (const auto peer = weak.lock()) peer->on_reply(std::move(frame));
  });
  const Hello::Request hello{.watchdog_token = watchdog->token(), .host = node_name(),
                             .pid = static_cast<int32_t>(::getpid()), .boot_id = transport::boot_id(),
                             .data_path = static_cast<uint8_t>(transport::DataPathChoice::mpi)};
  if (!monitor_) monitor_ = std::make_unique<transport::WatchdogMonitor>();
  monitor_->watch(std::move(*watchdog), [weak, name] {
    log::info("proxy ", name, " is gone: no more data to it");
    if (const auto peer = weak.lock()) peer->lose();
  });
  try {
    link->set_chunk_bytes(link->call<Hello>(hello).chunk_bytes);
  } catch (const ClError&) {
    link->lose();
    fail("it refused the connection");
  }
  if (link->chunk_bytes() == 0) fail("it gave no chunk size");
  log::info("connected to proxy ", name, " to send it buffer data");
  return link;
}

void PeerLinks::close() {
  std::lock_guard lock(mutex_);
  if (monitor_) monitor_->stop();  // closing now is no loss to report
  for (auto& [key, link] : links_) {
    if (!link || link->lost()) continue;
    try {
      link->send<Goodbye>({});
    } catch (const ClError&) {
    }
    link->lose();
  }
  links_.clear();
  if (connect_comm_ != MPI_COMM_NULL) MPI_Comm_free(&connect_comm_);
}

namespace {

// Host memory for moves, kept for the next ones: fresh memory costs a page fault every 4 KiB
// (glibc maps allocations this large afresh each time), which halved the rate of a move.
class MoveMemory {
 public:
  // At least `size` bytes, back here when the last holder lets go.
  static std::shared_ptr<std::byte[]> take(size_t size) {
    static MoveMemory& pool = *new MoveMemory;  // never destroyed: memory may come back at exit
    std::unique_ptr<std::byte[]> memory;
    {
      std::lock_guard lock(pool.mutex_);
      // The smallest that fits (idle_ runs from largest to smallest).
      const auto fits = std::find_if(pool.idle_.rbegin(), pool.idle_.rend(), [&](const auto& m) { return m.size >= size; });
      if (fits != pool.idle_.rend()) {
        memory = std::move(fits->data);
        size = fits->size;
        pool.idle_.erase(std::next(fits).base());
      }
    }
    if (!memory) memory.reset(new std::byte[size]);
    return {memory.release(), [size](std::byte* data) { pool.give_back(data, size); }};
  }

 private:
  static constexpr size_t kept = 4;  // per proxy, at most kept * a move piece (the client's) idle
  // The largest are kept: a small one in their place would make every large move's memory fresh.
  void give_back(std::byte* data, size_t size) {
    std::unique_ptr<std::byte[]> memory(data);
    std::lock_guard lock(mutex_);
    idle_.push_back({std::move(memory), size});
    std::sort(idle_.begin(), idle_.end(), [](const Idle& a, const Idle& b) { return a.size > b.size; });
    if (idle_.size() > kept) idle_.pop_back();
  }
  struct Idle {
    std::unique_ptr<std::byte[]> data;
    size_t size;
  };
  std::mutex mutex_;
  std::vector<Idle> idle_;
};

}  // namespace

// Markers after every command enqueued so far on `queues`, and `events`, all retained and
// released when it goes; whether any may be held back indefinitely (completion.hpp).
struct QueueMarkers {
  std::vector<cl_event> events;
  bool may_be_held = false;
  QueueMarkers(Session& session, const std::vector<ObjectId>& queues, const std::vector<ObjectId>& and_events) {
    try {
      collect(session, queues, and_events);
    } catch (...) {  // a marker refused: the events retained so far go (no destructor runs)
      release();
      throw;
    }
  }
  QueueMarkers(const QueueMarkers&) = delete;
  QueueMarkers& operator=(const QueueMarkers&) = delete;
  ~QueueMarkers() { release(); }

 private:
  void collect(Session& session, const std::vector<ObjectId>& queues, const std::vector<ObjectId>& and_events) {
    std::vector<cl_command_queue> natives;  // all found before any is used
    for (ObjectId id : queues) natives.push_back(session.get<cl_command_queue>(id));
    std::vector<cl_event> found;
    for (ObjectId id : and_events) found.push_back(session.get<cl_event>(id));
    for (cl_event event : found) {
      clRetainEvent(event);
      events.push_back(event);
      cl_int status = CL_QUEUED;
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      may_be_held = may_be_held || status > CL_COMPLETE;
    }
    for (cl_command_queue queue : natives) {
      may_be_held = may_be_held || proxy::may_be_held(queue);
      cl_event marker = nullptr;
      check(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker));
      clFlush(queue);
      events.push_back(marker);
    }
  }
  void release() {
    for (cl_event event : events) clReleaseEvent(event);
    events.clear();
  }
};

// The sending side of one ticket: the range read chunk by chunk, after `after`'s markers, into
// slots of the session's staging ring (page-locked, so the device reads at full speed); each
// chunk sent as soon as it and those before it are read (the receiver takes them in order),
// then the reads' status. A sent chunk's slot takes the next chunk, so the move runs on in the
// background with the slots it started with, and the session goes on meanwhile.
class PeerSend : public std::enable_shared_from_this<PeerSend> {
 public:
  PeerSend(std::shared_ptr<PeerLink> peer, Bytes ticket, cl_command_queue queue, const PackedObject& object,
           uint64_t offset, uint64_t size, std::unique_ptr<QueueMarkers> after, StagingRing& ring)
      : peer_(std::move(peer)), ticket_(std::move(ticket)), queue_(queue), object_(object), offset_(offset),
        size_(size), after_(std::move(after)), ring_(ring), slots_((size + ring.slot_bytes() - 1) / ring.slot_bytes()),
        filled_(slots_.size(), false) {
    clRetainCommandQueue(queue_);
    clRetainMemObject(object_.mem);
  }
  // The last chunk was sent (its sender let go): the move's timing, for diagnosis.
  ~PeerSend() {
    log::debug("sent ", size_, " bytes to proxy ", peer_->name(), ": read in ", read_ms_, " ms, sent in ",
               ms_since(started_), " ms");
    after_.reset();
    clReleaseMemObject(object_.mem);
    clReleaseCommandQueue(queue_);
  }

  // Starts reading: after the move before it on the same link and ring, with that move's
  // slots as they come free, so that the pieces of a range go one after the other, each with
  // the whole pipeline; otherwise now, with one slot waited for and as many more as are free.
  void start() {
    const auto before = peer_->exchange_last_send(shared_from_this());
    if (before && &before->ring_ == &ring_ && before->follow_with(shared_from_this())) return;
    enter(ring_.acquire(StagingRing::Filler::device));
    enter_free_slots();
  }

  // Starts once what it follows has ended, where that may be held back (a writer waiting for a
  // user event): meanwhile it holds one slot (so that its ring stays), has no read on the queue,
  // which later sends share, and no later send follows it; then it reads with that slot and
  // every free one.
  void start_when_ended() {
    const StagingRing::Slot slot = ring_.acquire(StagingRing::Filler::device);
    {
      std::lock_guard lock(mutex_);
      ++slots_held_;
    }
    auto waiting = std::make_shared<std::atomic<size_t>>(after_->events.size());
    for (cl_event event : after_->events)
      when_complete(event, [self = shared_from_this(), slot, waiting](cl_int) {
        if (--*waiting != 0) return;
        self->read_next(slot);
        self->enter_free_slots();
      });
  }

 private:
  size_t chunks() const { return slots_.size(); }
  uint64_t chunk_offset(size_t index) const { return index * ring_.slot_bytes(); }
  size_t chunk_size(size_t index) const { return std::min<uint64_t>(ring_.slot_bytes(), size_ - chunk_offset(index)); }

  // Takes as many more slots as are free and it has chunks for.
  void enter_free_slots() {
    for (StagingRing::Slot slot; unread_ < chunks() && ring_.try_acquire(StagingRing::Filler::device, slot);)
      enter(slot);
  }

  // A slot comes to this move, from the ring or from the move before it.
  void enter(const StagingRing::Slot& slot) {
    {
      std::lock_guard lock(mutex_);
      ++slots_held_;
    }
    read_next(slot);
  }

  // `next` reads after this move, with its slots; false if this one has given back its last.
  bool follow_with(std::shared_ptr<PeerSend> next) {
    std::lock_guard lock(mutex_);
    if (done_reading_) return false;
    next_send_ = std::move(next);
    return true;
  }

  // A slot this move has no chunk left for goes to the move after it, or back to the ring.
  void leave(const StagingRing::Slot& slot) {
    std::shared_ptr<PeerSend> next;
    {
      std::lock_guard lock(mutex_);
      next = next_send_;
      if (--slots_held_ == 0 && !next) done_reading_ = true;
    }
    if (next) next->enter(slot);
    else ring_.release(slot);
  }

  // Reads the next chunk not yet read into `slot`, or lets the slot go if none is left.
  void read_next(const StagingRing::Slot& slot) {
    const size_t index = unread_.fetch_add(1);
    if (index >= chunks()) {
      leave(slot);
      return;
    }
    cl_event read = nullptr;
    const cl_int status = peer_->lost() ? peer_lost_status
                                        : enqueue_packed(false, queue_, object_, offset_ + chunk_offset(index),
                                                         chunk_size(index), slot.data, after_->events, &read);
    if (status != CL_SUCCESS) {  // this chunk and every later one fail, none is read
      filled(index, slot, status);
      for (size_t later; (later = unread_.fetch_add(1)) < chunks();) filled(later, {}, status);
      return;
    }
    clFlush(queue_);
    when_complete(read, [self = shared_from_this(), index, slot](cl_int done) { self->filled(index, slot, done); });
    clReleaseEvent(read);
  }

  // Chunk `index` was read into `slot` (or failed with a negative status; no slot if never
  // read). One thread at a time sends what is ready, in order: a send's completion may call
  // back here at once (a lost link), and must not wait for this one.
  void filled(size_t index, const StagingRing::Slot& slot, cl_int status) {
    {
      std::lock_guard lock(mutex_);
      if (status < 0 && status_ == CL_SUCCESS) status_ = status;
      slots_[index] = slot;
      filled_[index] = true;
      if (std::exchange(sending_, true)) return;
    }
    for (;;) {
      std::vector<size_t> ready;
      std::optional<cl_int> final_status;  // set once every chunk is ready
      {
        std::lock_guard lock(mutex_);
        for (; next_ < chunks() && filled_[next_]; ++next_) ready.push_back(next_);
        if (ready.empty()) {
          sending_ = false;
          return;
        }
        if (next_ == chunks()) final_status = status_;
      }
      if (ready.front() == 0) sequence_ = peer_->send<PeerData>({.ticket = ticket_, .size = size_});
      for (size_t chunk : ready) send_chunk(chunk);
      if (final_status) {
        peer_->send_status(sequence_, *final_status);
        read_ms_ = ms_since(started_);
      }
    }
  }

  void send_chunk(size_t index) {
    const StagingRing::Slot slot = slots_[index];
    if (!slot.data) {  // never read: the stream's length stays, its status says it failed
      const auto filler = std::make_shared<Bytes>(chunk_size(index));
      peer_->send_data(sequence_, filler->data(), filler->size(), [filler] {});
      return;
    }
    peer_->send_data(sequence_, slot.data, chunk_size(index), [self = shared_from_this(), slot] {
      self->read_next(slot);
    });
  }

  std::shared_ptr<PeerLink> peer_;
  Bytes ticket_;
  cl_command_queue queue_;
  PackedObject object_;
  uint64_t offset_, size_;
  std::unique_ptr<QueueMarkers> after_;
  StagingRing& ring_;  // the session's: given back only once its slots are back
  std::atomic<size_t> unread_{0};
  std::mutex mutex_;
  size_t slots_held_ = 0;      // reading or sending a chunk
  bool done_reading_ = false;  // every slot let go: no move can follow it any more
  std::shared_ptr<PeerSend> next_send_;
  std::vector<StagingRing::Slot> slots_;
  std::vector<bool> filled_;
  bool sending_ = false;  // a thread is in filled()'s sending loop
  size_t next_ = 0;
  uint64_t sequence_ = 0;
  cl_int status_ = CL_SUCCESS;
  const Clock::time_point started_ = Clock::now();
  double read_ms_ = 0;
};

namespace {

void check_ticket(const Bytes& ticket) {
  if (ticket.size() != peer_ticket_bytes) throw ClError{CL_INVALID_VALUE};
}

// The native queue and memory object of a move, with its range checked.
std::pair<cl_command_queue, PackedObject> move_target(Session& session, const Bytes& ticket, ObjectId queue,
                                                      ObjectId mem, uint64_t offset, uint64_t size) {
  check_ticket(ticket);
  const auto native_queue = session.get<cl_command_queue>(queue);
  const PackedObject object = packed_object(session.get<cl_mem>(mem));
  if (size == 0) throw ClError{CL_INVALID_VALUE};
  check_packed_range(object, offset, size);
  return {native_queue, object};
}

// Takes the rest of a PeerData stream that will not be used: its chunks and its status.
void drain_peer_data(Call& call, uint64_t size) {
  call.session.drain_bulk(call.sequence, size);
  call.session.drain_bulk(call.sequence, sizeof(cl_int));
}

}  // namespace

// --- executors ---------------------------------------------------------------------------

ExpectPeerData::Reply execute(Call& call, const ExpectPeerData::Request& request) {
  Session& session = call.session;
  const auto [landing, object] = move_target(session, request.ticket, request.landing_queue, request.mem,
                                             request.offset, request.size);
  check_chunks(object, session.chunk_bytes());
  session.check_fresh(request.event);
  cl_int status = CL_SUCCESS;
  cl_event landed = clCreateUserEvent(session.facts_of(landing).context, &status);
  check(status);
  auto arrival =
      std::make_shared<PeerArrival>(session.number(), landing, object.mem, request.offset, request.size, landed);
  session.server().peer_tickets().expect(request.ticket, arrival);
  session.hold_user_event(landed);  // failed at the session's end if the data never came
  clRetainEvent(landed);            // the arrival's reference is its own
  keep_event(call, request.event, landed);
  return {};
}

CancelPeerTicket::Reply execute(Call& call, const CancelPeerTicket::Request& request) {
  call.session.server().peer_tickets().cancel(request.ticket, call.session.number(), request.status);
  return {};
}

SendToPeer::Reply execute(Call& call, const SendToPeer::Request& request) {
  Session& session = call.session;
  // In-process, the application's own node: its data moves through the application.
  if (in_process(session)) throw ClError{CL_INVALID_OPERATION};
  const auto [queue, object] = move_target(session, request.ticket, request.queue, request.mem, request.offset,
                                           request.size);
  auto after = std::make_unique<QueueMarkers>(session, request.after_queues, request.after_events);
  const auto peer = session.server().peer_links().to(request.peer_node, request.peer_pid);
  StagingRing& ring = staging_of(session, queue);
  check_chunks(object, ring.slot_bytes());
  // The receiver takes chunks of its size.
  if (ring.slot_bytes() != peer->chunk_bytes()) throw ClError{CL_INVALID_OPERATION};
  peer->call<ClaimPeerTicket>({.ticket = request.ticket});
  // Claimed: whatever happens now, the receiver hears of it through the stream's status.
  const bool held = after->may_be_held;
  const auto send =
      std::make_shared<PeerSend>(peer, request.ticket, queue, object, request.offset, request.size, std::move(after), ring);
  if (held) send->start_when_ended();
  else send->start();
  session.statistics().count_to_client(request.size);
  log::debug("sending bytes ", request.offset, " to ", request.offset + request.size, " of ",
             object.image ? "an image" : "a buffer", " to proxy ", peer->name());
  return {};
}

ClaimPeerTicket::Reply execute(Call& call, const ClaimPeerTicket::Request& request) {
  call.session.server().peer_tickets().claim(request.ticket, call.session.number());
  return {};
}

// Chunk i is written to the device while chunk i+1 arrives; the arrival's event completes once
// every chunk has landed, or fails with the sender's status or a lost chunk's.
PeerData::Reply execute(Call& call, const PeerData::Request& request) {
  Session& session = call.session;
  call.bulk_consumed = true;  // taken here, with the status that follows it, whatever happens
  std::shared_ptr<PeerArrival> arrival;
  try {
    if (session.data_path().kind() != transport::DataPath::mpi) throw ClError{CL_INVALID_OPERATION};
    arrival = session.server().peer_tickets().take(request.ticket, session.number());
    if (!arrival->mem || request.size != arrival->size) throw ClError{CL_INVALID_VALUE};  // or an event's ticket
  } catch (const ClError&) {
    drain_peer_data(call, request.size);
    if (arrival) arrival->land(CL_INVALID_VALUE);
    throw;
  }
  const auto started = Clock::now();
  const PackedObject object = packed_object(arrival->mem);
  const auto data = MoveMemory::take(request.size);
  const size_t chunk = session.chunk_bytes();
  std::vector<std::shared_ptr<transport::Completion>> arriving;
  for (uint64_t offset = 0; offset < request.size; offset += chunk)
    arriving.push_back(session.data_path().fetch(call.sequence, 0, offset, data.get() + offset,
                                                 std::min<uint64_t>(chunk, request.size - offset)));
  cl_int sender_status = CL_SUCCESS;
  const auto status_arrived = session.data_path().fetch(call.sequence, 0, request.size,
                                                        reinterpret_cast<std::byte*>(&sender_status),
                                                        sizeof sender_status);
  cl_int failure = CL_SUCCESS;
  std::vector<cl_event> writes;
  for (size_t index = 0; index < arriving.size(); ++index) {
    if (arriving[index]->wait() != OpStatus::done) failure = peer_lost_status;
    if (failure != CL_SUCCESS) continue;
    const uint64_t offset = index * chunk;
    cl_event write = nullptr;
    failure = enqueue_packed(true, arrival->queue, object, arrival->offset + offset,
                             std::min<uint64_t>(chunk, request.size - offset), data.get() + offset, {}, &write);
    if (failure == CL_SUCCESS) writes.push_back(write);
    clFlush(arrival->queue);
  }
  if (status_arrived->wait() != OpStatus::done) failure = peer_lost_status;
  const double arrived_ms = ms_since(started);
  if (failure == CL_SUCCESS && sender_status < 0) failure = sender_status;
  session.statistics().count_to_proxy(request.size);
  cl_event landed = nullptr;
  if (!writes.empty()) {
    const cl_int status = clEnqueueMarkerWithWaitList(arrival->queue, static_cast<cl_uint>(writes.size()),
                                                      writes.data(), &landed);
    for (cl_event write : writes) clReleaseEvent(write);
    if (status != CL_SUCCESS && failure == CL_SUCCESS) failure = status;
  }
  if (!landed) {
    arrival->land(failure != CL_SUCCESS ? failure : CL_OUT_OF_RESOURCES);
  } else {
    clFlush(arrival->queue);
    when_complete(landed, [arrival, data, failure, started, arrived_ms](cl_int status) {
      arrival->land(failure < 0 ? failure : status);
      log::debug("received ", arrival->size, " bytes from a proxy: arrived in ", arrived_ms, " ms, on the device in ",
                 ms_since(started), " ms");
    });
    clReleaseEvent(landed);
  }
  check(failure);
  return {};
}

ExpectPeerEvent::Reply execute(Call& call, const ExpectPeerEvent::Request& request) {
  Session& session = call.session;
  check_ticket(request.ticket);
  // As clCreateUserEvent: the session holds it, and fails it at its end if no status came.
  execute(call, CreateUserEvent::Request{.id = request.event, .context = request.context});
  const cl_event event = session.get<cl_event>(request.event);
  clRetainEvent(event);  // the ticket's own reference
  session.server().peer_tickets().expect(
      request.ticket, std::make_shared<PeerArrival>(session.number(), nullptr, nullptr, 0, 0, event));
  return {};
}

SignalPeer::Reply execute(Call& call, const SignalPeer::Request& request) {
  Session& session = call.session;
  check_ticket(request.ticket);
  const cl_event event = session.get<cl_event>(request.event);
  const auto peer = session.server().peer_links().to(request.peer_node, request.peer_pid);
  peer->call<ClaimPeerTicket>({.ticket = request.ticket});
  // Claimed: should this proxy vanish before the event ends, the other fails the ticket.
  when_complete(event, [peer, ticket = request.ticket](cl_int status) {
    peer->send<PeerEventStatus>({.ticket = ticket, .status = status < 0 ? status : CL_COMPLETE});
  });
  return {};
}

PeerEventStatus::Reply execute(Call& call, const PeerEventStatus::Request& request) {
  const auto arrival = call.session.server().peer_tickets().take(request.ticket, call.session.number());
  if (arrival->mem) throw ClError{CL_INVALID_VALUE};  // a data ticket: its data comes with PeerData
  arrival->land(request.status);
  return {};
}

}  // namespace hivecl::proxy
