// Contexts spanning several connections (spanning.hpp): parts, buffers made where they are
// used, and buffer data moved to the part of the command that reads it.
#include "icd/spanning.hpp"

#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <bit>
#include <exception>
#include <future>
#include <memory>
#include <random>

#include "config.hpp"
#include "icd/api.hpp"
#include "icd/callbacks.hpp"
#include "log.hpp"

using namespace hivecl::protocol;

size_t _cl_context::part_of(const hivecl::icd::Connection* other) const {
  if (other == connection) return 0;
  for (size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i].connection == other) return i + 1;
  throw hivecl::ClError{CL_INVALID_CONTEXT};
}

_cl_kernel* _cl_kernel::part_on(const hivecl::icd::Connection* other) {
  if (other == connection) return this;
  for (auto& part : parts)
    if (part->connection == other) return part.get();
  // The program was not built for the devices of that part.
  throw hivecl::ClError{CL_INVALID_PROGRAM_EXECUTABLE};
}

namespace hivecl::icd {

namespace {

using PartMask = Spread::PartMask;

constexpr PartMask part_bit(size_t part) { return PartMask{1} << part; }
// Data moves through this process in pieces of this size (two at once, relay_pieces): small
// enough that a move of a few of them overlaps its reads and writes, large enough that the
// round trips of each piece are little beside its data.
constexpr size_t relay_piece = size_t{16} << 20;
// Data moves from proxy to proxy in pieces of this size: what each proxy holds at once.
constexpr size_t proxy_send_piece = size_t{64} << 20;

// A queue of HiveCL's own on `part` (on that part's first device), made on first use: one of
// `queues` (service_queues or landing_queues).
ObjectId own_queue(_cl_context* context, size_t part, std::vector<Replica> _cl_context::*queues) {
  std::lock_guard lock(context->service_mutex);
  (context->*queues).resize(context->part_count(), Replica{nullptr, no_object});
  Replica& queue = (context->*queues)[part];
  if (queue.id != no_object) return queue.id;
  Connection* connection = context->part_connection(part);
  const auto device = std::find_if(context->devices.begin(), context->devices.end(),
                                   [&](cl_device_id d) { return d->connection == connection; });
  const ObjectId id = connection->new_id();
  connection->call<CreateCommandQueue>(
      {.id = id, .context = context->id_on(connection), .device = (*device)->id, .properties = {}});
  queue = {connection, id};
  return id;
}

ObjectId service_queue(_cl_context* context, size_t part) {
  return own_queue(context, part, &_cl_context::service_queues);
}

// Where a range starts, a boundary in the map (the range before it keeps its holders).
void split_at(Spread& spread, size_t at) {
  if (at >= spread.size) return;
  auto next = spread.holders.upper_bound(at);
  const PartMask holders = std::prev(next)->second;
  spread.holders.emplace(at, holders);
}

// The two buffers of relay_pieces, kept from move to move up to relay_piece each, so that a move
// does not fault fresh pages in first (a larger piece, one layer of a large image, gets memory
// of its own for that move). Used by HiveCL's move thread and, for the reads it hands over,
// its read-ahead thread.
class RelayMemory {
 public:
  // Two buffers of `bytes`, or one where a move has a single piece.
  std::array<std::byte*, 2> buffers(size_t bytes, size_t pieces) {
    if (bytes > relay_piece) {
      for (size_t i = 0; i < std::min<size_t>(pieces, 2); ++i) oversized_[i].reset(new std::byte[bytes]);
      return {oversized_[0].get(), oversized_[1].get()};
    }
    for (auto& buffer : kept_)
      if (!buffer) buffer.reset(new std::byte[relay_piece]);
    return {kept_[0].get(), kept_[1].get()};
  }
  void release_oversized() {
    for (auto& buffer : oversized_) buffer.reset();
  }

 private:
  std::array<std::unique_ptr<std::byte[]>, 2> kept_, oversized_;
};

// Runs read(piece, memory) on the read-ahead thread; the future tells its end (or throws its failure).
std::future<void> read_ahead(const std::function<void(size_t, std::byte*)>& read, size_t piece, std::byte* memory) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> ended = done->get_future();
  TaskThread::read_ahead().post([&read, piece, memory, done] {
    try {
      read(piece, memory);
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return ended;
}

// Reads [begin, end) of a buffer from `source` into this process and writes it on `target`, in
// pieces of relay_piece.
void move_bytes(_cl_mem* root, Connection* source, ObjectId source_queue, Connection* target, ObjectId target_queue,
                size_t begin, size_t end) {
  const ObjectId source_id = root->id_on(source), target_id = root->id_on(target);
  const auto offset = [&](size_t piece) { return begin + piece * relay_piece; };
  const auto size = [&](size_t piece) { return std::min(relay_piece, end - offset(piece)); };
  const auto read = [&](size_t piece, std::byte* memory) {
    uint64_t sequence = 0;
    source->call<ReadBuffer>({.queue = source_queue, .mem = source_id, .offset = offset(piece), .size = size(piece),
                              .host_address = host_address(source, memory), .blocking = true},
                             {}, &sequence);
    check(source->receive(sequence, memory, size(piece))->wait());
  };
  const auto write = [&](size_t piece, const std::byte* memory) {
    uint64_t sequence = 0;
    const uint64_t address = host_address(target, memory);
    target->call<WriteBuffer>({.queue = target_queue, .mem = target_id, .offset = offset(piece), .size = size(piece),
                               .host_address = address, .blocking = target->in_process()},
                              {memory, address ? 0 : size(piece)}, &sequence);
    if (target->in_process()) check(target->receive(sequence, nullptr, 0)->wait());
  };
  relay_pieces((end - begin + relay_piece - 1) / relay_piece, std::min(relay_piece, end - begin), read, write);
}

// Reads [begin, end) of the root buffer (all of an image) from part `from` into this process and
// writes it on part `to`, where it has landed on the device once this returns. With queues that
// hold nothing else (no command there waits for another).
void move_range(_cl_mem* root, size_t from, size_t to, size_t begin, size_t end) {
  _cl_context* context = root->context.get();
  Connection* source = context->part_connection(from);
  Connection* target = context->part_connection(to);
  const ObjectId source_queue = own_queue(context, from, &_cl_context::move_queues);
  const ObjectId target_queue = own_queue(context, to, &_cl_context::move_queues);
  log::debug("spanning context: moving bytes ", begin, " to ", end, " of ", root->image ? "an image" : "a buffer",
             " from ", source->record().node, " to ", target->record().node);
  if (root->image)
    move_image(root, source, source_queue, target, target_queue, relay_piece);
  else
    move_bytes(root, source, source_queue, target, target_queue, begin, end);
  target->call<Finish>({.queue = target_queue});
}

// The moves landing on `part` that overlap [begin, end).
std::vector<std::shared_ptr<OwnEvent>> landings_on(const Spread& spread, size_t part, size_t begin, size_t end) {
  std::vector<std::shared_ptr<OwnEvent>> found;
  for (const Spread::Landing& landing : spread.landings[part])
    if (landing.begin < end && begin < landing.end) found.push_back(landing.landed);
  return found;
}

// An event of `connection` that ends when the commands so far of `queue` have (a marker there).
std::shared_ptr<OwnEvent> end_marker(Connection* connection, ObjectId queue) {
  const ObjectId id = connection->new_id();
  connection->call<EnqueueMarker>({.queue = queue, .barrier = false, .tail = {.wait_list = {}, .event = id}});
  return std::make_shared<OwnEvent>(connection, id);
}

// A move through this process, waiting for the events it must follow (watched); run on HiveCL's
// move thread, where all of its state is touched and its last holder lets it go.
struct PendingMove {
  Ref<_cl_mem> root;  // its ids on each part, and its context's queues, while the move needs them
  size_t from = 0, to = 0, begin = 0, end = 0;
  std::shared_ptr<OwnEvent> landed;               // a user event on `to`, set once the data is there
  std::vector<std::shared_ptr<OwnEvent>> before;  // on `from`: held until they have ended
  size_t waiting = 0;                             // of `before`, and the start
  cl_int status = CL_COMPLETE;                    // or the first failure among `before`

  static void ended(std::shared_ptr<PendingMove> move, cl_int reached) {
    TaskThread::moves().post([move = std::move(move), reached] {
      if (reached < 0 && move->status == CL_COMPLETE) move->status = reached;
      if (--move->waiting == 0) move->run();
    });
  }

  // Watches each of `before` (one whose part is lost counts as failed), and counts the start
  // itself as one more.
  static void start(const std::shared_ptr<PendingMove>& move) {
    move->waiting = move->before.size() + 1;
    for (const auto& event : move->before) {
      try {
        event->connection->call_later<WatchEvent>(
            {.event = event->id, .status = CL_COMPLETE},
            [move](cl_int status, const WatchEvent::Reply& reply) mutable {
              ended(std::move(move), watched_status(status, reply));
            });
      } catch (const ClError& error) {
        ended(move, error.code);
      }
    }
    ended(move, CL_COMPLETE);
  }

  void run() {
    before.clear();
    if (status == CL_COMPLETE) {
      try {
        move_range(root.get(), from, to, begin, end);
      } catch (const ClError& error) {
        status = error.code;
      }
    }
    if (status != CL_COMPLETE) log::warn("spanning context: a move of buffer data failed (", status, ")");
    try {
      landed->connection->call<SetUserEventStatus>({.event = landed->id, .execution_status = status});
    } catch (const ClError&) {  // the waiting command's part is gone: its commands fail anyway
    }
  }
};

// Moves [begin, end) of the root buffer from part `from` to part `to` through this process (one of
// them is in-process), without waiting: once the commands so far of the queues that wrote it on
// `from`, and the moves still landing it there, have ended, HiveCL's move thread reads it and
// writes it on `to`, then sets a user event there that `command` waits for (failed with the
// move's error, or a failure it followed, should there be one).
void move_through_here(Spread& spread, _cl_mem* root, size_t from, size_t to, size_t begin, size_t end,
                       EnqueuedCommand& command) {
  _cl_context* context = root->context.get();
  Connection* source = context->part_connection(from);
  Connection* target = context->part_connection(to);
  auto move = std::make_shared<PendingMove>();
  move->before = landings_on(spread, from, begin, end);
  for (const auto& queue : spread.writers[from]) move->before.push_back(end_marker(source, queue->id));
  const ObjectId landed = target->new_id();
  target->call<CreateUserEvent>({.id = landed, .context = context->id_on(target)});
  move->landed = std::make_shared<OwnEvent>(target, landed);
  move->root = Ref<_cl_mem>(root);
  move->from = from, move->to = to, move->begin = begin, move->end = end;
  command.wait_also(move->landed);
  spread.landings[to].push_back({begin, end, move->landed});
  PendingMove::start(move);
}

// Whether the proxies of `from` and `to` send `root`'s data to each other: a buffer's, and an
// image's whose pixels fit a whole number of times into the pieces and chunks a move goes in (a
// pixel of a power of two bytes), unless this process reaches both through shared memory
// (proxies of this node, which Open MPI joins over TCP: images moved through this process in a
// third of the time proxy to proxy took on the H100; `local_proxy_moves`). Other data moves
// through this process.
bool proxies_send(const _cl_mem& root, const Connection& from, const Connection& to) {
  if (from.in_process() || to.in_process()) return false;
  if (root.image && !std::has_single_bit(root.image->element_size)) return false;
  return !(from.moves_by_memory() && to.moves_by_memory()) || config().local_proxy_moves == "proxy";
}

// Has the proxy of part `from` send [begin, end) of the root buffer (an image's pixels, packed) to
// the proxy of part `to`, once the commands so far of the queues that wrote it on `from`, and the
// moves still landing it there, have ended; `command` (on `to`) waits for it to have landed, in
// pieces of proxy_send_piece.
void send_between_proxies(Spread& spread, _cl_mem* root, size_t from, size_t to, size_t begin, size_t end,
                          EnqueuedCommand& command) {
  _cl_context* context = root->context.get();
  Connection* source = context->part_connection(from);
  Connection* target = context->part_connection(to);
  std::vector<ObjectId> after;
  for (const auto& queue : spread.writers[from]) after.push_back(queue->id);
  const ObjectId source_queue = service_queue(context, from);
  const ObjectId landing_queue = own_queue(context, to, &_cl_context::landing_queues);
  log::debug("spanning context: proxy ", source->record().node, " sends bytes ", begin, " to ", end, " of ",
             root->image ? "an image" : "a buffer", " to proxy ", target->record().node);
  for (size_t offset = begin; offset < end; offset += proxy_send_piece) {
    const size_t size = std::min(proxy_send_piece, end - offset);
    std::vector<ObjectId> landing_there;
    for (const auto& landing : landings_on(spread, from, offset, offset + size)) landing_there.push_back(landing->id);
    const Bytes ticket = new_peer_ticket();
    const ObjectId landed_id = target->new_id();
    target->call<ExpectPeerData>({.ticket = ticket, .landing_queue = landing_queue, .mem = root->id_on(target),
                                  .offset = offset, .size = size, .event = landed_id});
    const auto landed = std::make_shared<OwnEvent>(target, landed_id);
    command.wait_also(landed);
    try {
      source->call<SendToPeer>({.ticket = ticket, .queue = source_queue, .mem = root->id_on(source), .offset = offset,
                                .size = size, .after_queues = after, .after_events = landing_there,
                                .peer_node = target->record().node, .peer_pid = target->record().pid});
    } catch (const ClError& error) {
      target->post<CancelPeerTicket>({.ticket = ticket, .status = error.code});
      throw;
    }
    spread.landings[to].push_back({offset, offset + size, landed});
  }
}

// Brings every byte of [begin, end) that `part` does not hold from a part that does.
void bring(Spread& spread, _cl_mem* root, size_t part, size_t begin, size_t end, EnqueuedCommand& command) {
  split_at(spread, begin);
  split_at(spread, end);
  for (auto range = spread.holders.lower_bound(begin); range != spread.holders.end() && range->first < end; ++range) {
    if (range->second & part_bit(part)) continue;
    const size_t from = static_cast<size_t>(std::countr_zero(range->second));
    const auto next = std::next(range);
    const size_t range_end = next == spread.holders.end() ? spread.size : next->first;
    _cl_context* context = root->context.get();
    if (proxies_send(*root, *context->part_connection(from), *context->part_connection(part)))
      send_between_proxies(spread, root, from, part, range->first, range_end, command);
    else
      move_through_here(spread, root, from, part, range->first, range_end, command);
    range->second |= part_bit(part);
  }
}

// A command on `part` that uses [begin, end) waits for the moves that may still be landing any of it there.
void wait_for_landings(const Spread& spread, size_t part, size_t begin, size_t end, EnqueuedCommand& command) {
  for (auto& landed : landings_on(spread, part, begin, end)) command.wait_also(std::move(landed));
}

// [begin, end) written on `part` by a command of `queue`: only that part holds it now. The moves
// that landed all of their data inside it elsewhere are of data no longer held there; those on
// `part` stay, for commands there that do not wait for this one (a kernel's buffer arguments
// count as written whether it writes them or not).
void written(Spread& spread, const _cl_command_queue* queue, size_t part, size_t begin, size_t end) {
  for (size_t other = 0; other < spread.landings.size(); ++other)
    if (other != part)
      std::erase_if(spread.landings[other],
                    [&](const Spread::Landing& l) { return begin <= l.begin && l.end <= end; });
  split_at(spread, begin);
  split_at(spread, end);
  for (auto range = spread.holders.lower_bound(begin); range != spread.holders.end() && range->first < end; ++range)
    range->second = part_bit(part);
  for (auto range = spread.holders.begin(); range != spread.holders.end();) {  // joins equal neighbours
    const auto next = std::next(range);
    if (next != spread.holders.end() && next->second == range->second) spread.holders.erase(next);
    else range = next;
  }
  auto& writers = spread.writers[part];
  if (std::none_of(writers.begin(), writers.end(), [&](const auto& q) { return q.get() == queue; }))
    writers.emplace_back(const_cast<_cl_command_queue*>(queue));
}

// The buffer or image on `connection`, made there first if need be (the root, then the sub-buffer).
ObjectId made_on(_cl_mem* mem, _cl_mem* root, Connection* connection) {
  const _cl_context* context = root->context.get();
  if (connection == root->connection) return mem->id;
  if (!root->exists_on(connection)) {
    const Replica replica{connection, connection->new_id()};
    // Its data comes from the parts that hold it: no host pointer here.
    const cl_mem_flags flags = root->flags & (access_flags | CL_MEM_ALLOC_HOST_PTR);
    if (root->image)
      connection->call<CreateImage>(image_creation(*root, connection, replica.id, flags));
    else
      connection->call<CreateBuffer>({.id = replica.id, .context = context->id_on(connection), .flags = flags,
                                      .size = root->size});
    root->replicas.push_back(replica);
  }
  if (mem != root && !mem->exists_on(connection)) {
    const Replica replica{connection, connection->new_id()};
    connection->call<CreateSubBuffer>({.id = replica.id, .parent = root->id_on(connection),
                                       .flags = mem->flags & access_flags, .origin = mem->origin, .size = mem->size});
    mem->replicas.push_back(replica);
  }
  return mem->id_on(connection);
}

}  // namespace

Bytes new_peer_ticket() {
  static std::mutex mutex;
  static std::random_device random;
  std::lock_guard lock(mutex);
  Bytes ticket(peer_ticket_bytes);
  for (auto& byte : ticket) byte = static_cast<std::byte>(random());
  return ticket;
}

std::shared_ptr<Spread> new_spread(const _cl_context* context, size_t size, bool with_data) {
  auto spread = std::make_shared<Spread>();
  spread->size = size;
  spread->holders.emplace(0, with_data ? part_bit(0) : ~PartMask{0});
  spread->writers.resize(context->part_count());
  spread->landings.resize(context->part_count());
  return spread;
}

ObjectId use_mem(const _cl_mem* mem, EnqueuedCommand& command, Access access, size_t offset, size_t size) {
  if (!mem->context->spans()) return mem->id;
  const _cl_command_queue* queue = command.queue();
  auto* object = const_cast<_cl_mem*>(mem);
  _cl_mem* root = mem->parent ? mem->parent.get() : object;
  Spread& spread = *root->spread;
  std::lock_guard lock(spread.mutex);
  const size_t part = root->context->part_of(queue->connection);
  const ObjectId id = made_on(object, root, queue->connection);
  // A range outside the buffer is the device's to refuse; nothing moves for it.
  if (offset > mem->size || size > mem->size - offset || size == 0) return id;
  const size_t begin = mem->origin + offset, end = begin + size;
  wait_for_landings(spread, part, begin, end, command);
  if (static_cast<uint8_t>(access) & static_cast<uint8_t>(Access::reads)) bring(spread, root, part, begin, end, command);
  if (static_cast<uint8_t>(access) & static_cast<uint8_t>(Access::writes)) written(spread, queue, part, begin, end);
  return id;
}

ObjectId use_mem(const _cl_mem* mem, EnqueuedCommand& command, Access access) {
  return use_mem(mem, command, access, 0, mem->size);
}

void relay_pieces(size_t count, size_t piece_bytes, const std::function<void(size_t, std::byte*)>& read,
                  const std::function<void(size_t, const std::byte*)>& write) {
  if (count == 0) return;
  // Never destroyed: a move may still run when the process exits.
  static RelayMemory& memory = *new RelayMemory();
  const std::array<std::byte*, 2> buffers = memory.buffers(piece_bytes, count);
  std::future<void> ahead = read_ahead(read, 0, buffers[0]);
  try {
    for (size_t piece = 0; piece < count; ++piece) {
      ahead.get();
      if (piece + 1 < count) ahead = read_ahead(read, piece + 1, buffers[(piece + 1) % 2]);
      write(piece, buffers[piece % 2]);
    }
  } catch (...) {
    if (ahead.valid()) ahead.wait();  // its buffer is not reused while a read still fills it
    memory.release_oversized();
    throw;
  }
  memory.release_oversized();
}

void release_service_queues(_cl_context* context) {
  for (const auto* queues : {&context->service_queues, &context->landing_queues, &context->move_queues})
    for (const Replica& queue : *queues)
      if (queue.id != no_object) release_remote(queue.connection, ObjectKind::command_queue, queue.id);
}

}  // namespace hivecl::icd
