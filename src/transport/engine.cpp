#include "transport/engine.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>

#include "log.hpp"
#include "transport/polling.hpp"

namespace hivecl::transport {

using protocol::Bytes;
using Clock = std::chrono::steady_clock;

// Far longer than a dead peer's last frames take to come out of the sockets.
constexpr auto comm_quarantine = std::chrono::seconds(10);

void Completion::complete(OpStatus status) {
  state_.store(static_cast<uint32_t>(status), std::memory_order_release);
  state_.notify_all();
}

OpStatus Completion::wait() const {
  // The caller waits for nothing else (transport/polling.hpp).
  if (poll_for([this] { return status() != OpStatus::pending; }, longest_busy_poll)) return status();
  state_.wait(static_cast<uint32_t>(OpStatus::pending), std::memory_order_acquire);
  return status();
}

OpStatus Completion::wait_for(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (status() == OpStatus::pending && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return status();
}

Engine::~Engine() { stop(); }

void Engine::start(Tuning tuning, std::function<bool()> setup, std::function<void()> teardown) {
  tuning_ = tuning;
  thread_ = std::thread([this, setup = std::move(setup), teardown = std::move(teardown)] { run(setup, teardown); });
}

bool Engine::wait_started() {
  std::unique_lock lock(mutex_);
  started_cv_.wait(lock, [this] { return started_; });
  return setup_ok_;
}

void Engine::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Engine::submit(Command&& command) {
  {
    std::lock_guard lock(mutex_);
    commands_.push_back(std::move(command));
    has_commands_.store(true, std::memory_order_release);
  }
  wake_.notify_one();
}

void Engine::listen(const LinkPtr& link, int tag, bool always, OnMessage on_message) {
  submit(Listener{link, tag, always, std::move(on_message)});
}

void Engine::send(const LinkPtr& link, int tag, Bytes&& message, Done done) {
  Operation op{.link = link, .is_send = true, .tag = tag, .owned = std::move(message), .done = std::move(done)};
  op.data = op.owned.data();
  op.size = op.owned.size();
  submit(std::move(op));
}

void Engine::send(const LinkPtr& link, int tag, const void* data, size_t size, Done done) {
  submit(Operation{.link = link, .is_send = true, .tag = tag, .data = const_cast<void*>(data), .size = size,
                   .done = std::move(done)});
}

void Engine::receive(const LinkPtr& link, int tag, void* data, size_t size, Done done) {
  submit(Operation{.link = link, .is_send = false, .tag = tag, .data = data, .size = size, .done = std::move(done)});
}

void Engine::receive_after_frames(const LinkPtr& link, int tag, void* data, size_t size, Done done) {
  submit(Operation{.link = link, .is_send = false, .tag = tag, .data = data, .size = size, .done = std::move(done),
                   .after_frames = true});
}

void Engine::forget(const LinkPtr& link) {
  link->lost_.store(true, std::memory_order_release);
  submit(Forget{link});
}

void Engine::forget_after_sends(const LinkPtr& link) { submit(Forget{link}); }

void Engine::run(std::function<bool()> setup, std::function<void()> teardown) {
  const bool ok = !setup || setup();
  {
    std::lock_guard lock(mutex_);
    started_ = true;
    setup_ok_ = ok;
  }
  started_cv_.notify_all();
  if (!ok) return;

  auto last_activity = Clock::now();
  while (true) {
    bool activity = take_commands();
    if (stopping_.load(std::memory_order_acquire)) break;
    activity |= test_operations();
    activity |= poll_listeners();
    if (!deferred_.empty()) activity |= release_deferred(false);
    if (!quarantine_.empty()) activity |= drain_quarantine(false);
    if (activity) {
      last_activity = Clock::now();
    } else if (Clock::now() - last_activity > tuning_.spin) {
      idle_wait(last_activity);
    } else {
      // Polling must not keep the threads that do the work (the proxy's session workers,
      // the application) from a core: on few cores they would wait a scheduler tick.
      sched_yield();
    }
  }
  abandon_all();
  drain_quarantine(true);
  if (teardown) teardown();
  graveyard_.clear();
}

bool Engine::take_commands() {
  if (!has_commands_.load(std::memory_order_acquire)) return false;
  std::vector<Command> commands;
  {
    std::lock_guard lock(mutex_);
    commands.swap(commands_);
    has_commands_.store(false, std::memory_order_release);
  }
  for (auto& command : commands) {
    if (auto* op = std::get_if<Operation>(&command)) {
      begin(std::move(*op));
    } else if (auto* listener = std::get_if<Listener>(&command)) {
      if (!listener->link->lost()) listeners_.push_back(std::move(*listener));
    } else {
      drop_link(std::get<Forget>(command).link);
    }
  }
  return !commands.empty();
}

void Engine::begin(Operation&& op) {
  if (op.link->lost()) {
    if (op.done) op.done(OpStatus::cancelled, std::move(op.owned));
    return;
  }
  if (op.size > static_cast<size_t>(INT_MAX)) {
    log::error("engine: a single MPI message of ", op.size, " bytes is too large");
    if (op.done) op.done(OpStatus::failed, std::move(op.owned));
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int count = static_cast<int>(op.size);
  int rc = MPI_SUCCESS;
  if (op.is_send) {
    rc = MPI_Isend(op.data, count, MPI_BYTE, 0, op.tag, op.link->comm(), &request);
  } else {
    rc = MPI_Irecv(op.data, count, MPI_BYTE, 0, op.tag, op.link->comm(), &request);
  }
  if (rc != MPI_SUCCESS) {
    log::warn("engine: MPI ", op.is_send ? "send" : "receive", " failed to start (", rc, ")");
    if (op.done) op.done(OpStatus::failed, std::move(op.owned));
    return;
  }
  active_.push_back(std::move(op));
  requests_.push_back(request);
}

bool Engine::test_operations() {
  if (requests_.empty()) return false;
  std::vector<int> indices(requests_.size());
  std::vector<MPI_Status> statuses(requests_.size());
  int count = 0;
  const int rc = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices.data(),
                              statuses.data());
  if (count == MPI_UNDEFINED || count == 0) return false;
  // Finish from the highest index down so that swap-removal keeps lower indices valid.
  std::vector<std::pair<int, OpStatus>> finished;
  for (int i = 0; i < count; ++i) {
    const bool failed = rc == MPI_ERR_IN_STATUS && statuses[i].MPI_ERROR != MPI_SUCCESS;
    finished.emplace_back(indices[i], failed ? OpStatus::failed : OpStatus::done);
  }
  std::sort(finished.begin(), finished.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (auto [index, status] : finished) finish(static_cast<size_t>(index), status);
  return true;
}

void Engine::finish(size_t index, OpStatus status) {
  Operation op = std::move(active_[index]);
  active_[index] = std::move(active_.back());
  active_.pop_back();
  requests_[index] = requests_.back();
  requests_.pop_back();
  if (op.after_frames && status == OpStatus::done) {
    defer(std::move(op));
  } else if (op.done) {
    op.done(status, std::move(op.owned));
  }
}

// Until released, the link's listeners look for frames even where none is expected.
void Engine::defer(Operation&& op) {
  op.link->expect(1);
  deferred_.push_back({.op = std::move(op), .until = Clock::now() + ordered_delivery_bound});
}

// Runs the deferred operations whose links showed no frame to deliver at enough looks in a row,
// or whose time is up (all of them: the engine stops). True if one ran.
bool Engine::release_deferred(bool all) {
  const auto now = Clock::now();
  std::vector<Deferred> released;
  std::erase_if(deferred_, [&](Deferred& deferred) {
    if (!all && now < deferred.until && !deferred.op.link->lost()) {
      deferred.quiet_looks = frames_waiting(deferred.op.link) ? 0 : deferred.quiet_looks + 1;
      if (deferred.quiet_looks < quiet_looks_to_release) return false;
    }
    released.push_back(std::move(deferred));
    return true;
  });
  for (Deferred& deferred : released) {
    deferred.op.link->expect(-1);
    if (deferred.op.done) deferred.op.done(OpStatus::done, std::move(deferred.op.owned));
  }
  return !released.empty();
}

bool Engine::receiving_control(const Listener& listener) const {
  return std::any_of(active_.begin(), active_.end(), [&](const Operation& op) {
    return op.probed && op.link == listener.link && op.tag == listener.tag;
  });
}

// A frame of `link` is on its way to a listener, or has arrived and waits for one.
bool Engine::frames_waiting(const LinkPtr& link) const {
  return std::any_of(listeners_.begin(), listeners_.end(), [&](const Listener& listener) {
    if (listener.link != link) return false;
    if (receiving_control(listener)) return true;
    int found = 0;
    MPI_Status status;
    return MPI_Iprobe(0, listener.tag, link->comm(), &found, &status) == MPI_SUCCESS && found;
  });
}

// A frame is seen with MPI_Iprobe and received with MPI_Irecv, one at a time per listener so
// that frames reach on_message in the order they were sent. Only the engine thread receives on
// a listener's tag, so the receive takes the frame the probe saw. Not MPI_Improbe/MPI_Imrecv:
// Open MPI 4.1's UCX PML leaves an MPI_Imrecv request's communicator unset, and MPI_Testsome
// crashes on it (ompi_errhandler_request_invoke) when the receive fails: a truncated frame, a
// sender that died (docs/FINDINGS.md).
bool Engine::poll_listeners() {
  bool activity = false;
  for (size_t i = 0; i < listeners_.size(); ++i) {
    Listener& listener = listeners_[i];
    if (!listener.always && listener.link->expected_.load(std::memory_order_acquire) <= 0) continue;
    if (receiving_control(listener)) continue;
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(0, listener.tag, listener.link->comm(), &found, &status) != MPI_SUCCESS || !found) continue;
    int size = 0;
    MPI_Get_count(&status, MPI_BYTE, &size);
    Operation op{.link = listener.link, .is_send = false, .tag = listener.tag, .probed = true};
    const bool too_large = static_cast<uint64_t>(size) > tuning_.max_message_bytes;
    // A frame over the limit is still received, into nothing (truncated), so it is consumed.
    // Not into a small buffer: Open MPI 4.1's ob1 copies a large message whole into the
    // receive buffer over shared memory (vader's CMA get), truncated or not; at address 0 the
    // copy faults and writes nothing (docs/FINDINGS.md).
    if (!too_large) op.owned.resize(static_cast<size_t>(size));
    op.data = too_large ? nullptr : op.owned.data();
    op.size = op.owned.size();
    op.done = [on_message = listener.on_message, too_large, size](OpStatus st, Bytes&& frame) {
      if (too_large) log::warn("engine: dropped a control frame of ", size, " bytes (over max_message_bytes)");
      if (st == OpStatus::done && !too_large) on_message(std::move(frame));
    };
    begin(std::move(op));
    activity = true;
  }
  return activity;
}

void Engine::drop_link(const LinkPtr& link) {
  link->lost_.store(true, std::memory_order_release);  // what comes after the Forget is not begun
  std::erase_if(listeners_, [&](const Listener& l) { return l.link == link; });
  for (size_t i = active_.size(); i-- > 0;) {
    if (active_[i].link != link) continue;
    MPI_Request& request = requests_[i];
    if (!active_[i].is_send && !active_[i].probed) {
      MPI_Cancel(&request);
      int completed = 0;
      MPI_Test(&request, &completed, MPI_STATUS_IGNORE);
      if (!completed) MPI_Request_free(&request);
    } else {
      // Sends and receives of probed frames cannot be cancelled: release the request and
      // keep the engine's own buffer alive, since MPI may still touch it.
      MPI_Request_free(&request);
      graveyard_.push_back(std::move(active_[i].owned));
    }
    finish(i, OpStatus::cancelled);
  }
  if (link->comm() != MPI_COMM_NULL) quarantine_.push_back({link->comm(), Clock::now() + comm_quarantine, {}});
}

// Discards the frames that arrived on the quarantined communicators; frees those whose time
// is up (all of them when the engine stops). True if there were frames.
bool Engine::drain_quarantine(bool release_all) {
  bool drained = false;
  const auto now = Clock::now();
  std::erase_if(quarantine_, [&](Quarantined& quarantined) {
    drained |= discard_frames(quarantined);
    if (!release_all && now < quarantined.until) return false;
    // As drop_link does: MPI releases an unfinished receive's request when it ends.
    for (MPI_Request& discard : quarantined.discards) MPI_Request_free(&discard);
    MPI_Comm_free(&quarantined.comm);
    return true;
  });
  return drained;
}

// Receives each waiting frame into nothing (truncated), without waiting for it: a large
// frame's data may never come from a dead sender. As poll_listeners, probe then receive.
bool Engine::discard_frames(Quarantined& quarantined) {
  bool found_any = false;
  // A bounded number a pass: a flood of frames does not hold the engine thread.
  for (int frame = 0; frame < 64; ++frame) {
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, quarantined.comm, &found, &status) != MPI_SUCCESS || !found) break;
    MPI_Request discard = MPI_REQUEST_NULL;
    if (MPI_Irecv(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, quarantined.comm, &discard) != MPI_SUCCESS)
      break;
    quarantined.discards.push_back(discard);
    found_any = true;
  }
  // A failed test (truncation) has ended and freed its request too.
  std::erase_if(quarantined.discards, [](MPI_Request& discard) {
    int ended = 0;
    return MPI_Test(&discard, &ended, MPI_STATUS_IGNORE) != MPI_SUCCESS || ended;
  });
  return found_any;
}

bool Engine::has_attention() const {
  if (!active_.empty() || !deferred_.empty()) return true;
  return std::any_of(listeners_.begin(), listeners_.end(), [](const Listener& l) {
    return l.always || l.link->expected_.load(std::memory_order_acquire) > 0;
  });
}

void Engine::idle_wait(Clock::time_point last_activity) {
  std::unique_lock lock(mutex_);
  if (has_commands_ || stopping_) return;
  if (!has_attention()) {
    wake_.wait(lock, [this] { return has_commands_ || stopping_; });
    return;
  }
  // Back off: the longer nothing happened, the longer the sleep, up to max_sleep.
  const auto idle = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - last_activity);
  const auto sleep = std::clamp(idle / 8, std::chrono::microseconds(10), tuning_.max_sleep);
  wake_.wait_for(lock, sleep, [this] { return has_commands_ || stopping_; });
}

void Engine::abandon_all() {
  release_deferred(true);
  std::vector<LinkPtr> links;
  for (auto& op : active_) links.push_back(op.link);
  for (auto& l : listeners_) links.push_back(l.link);
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  for (auto& link : links) {
    link->lost_.store(true, std::memory_order_release);
    drop_link(link);
  }
  std::lock_guard lock(mutex_);
  for (auto& command : commands_)
    if (auto* op = std::get_if<Operation>(&command); op && op->done) op->done(OpStatus::cancelled, std::move(op->owned));
  commands_.clear();
}

std::shared_ptr<Transfer> Transfer::send(Engine& engine, const LinkPtr& link, int tag, const void* data, size_t size,
                                         size_t chunk) {
  auto transfer = std::make_shared<Transfer>();
  const size_t chunks = chunk_count(size, chunk);
  transfer->remaining_ = chunks;
  if (chunks == 0) transfer->completion_.complete(OpStatus::done);
  const auto* bytes = static_cast<const std::byte*>(data);
  for (size_t offset = 0; offset < size; offset += chunk)
    engine.send(link, tag, bytes + offset, std::min(chunk, size - offset),
                [transfer](OpStatus status, Bytes&&) { transfer->chunk_done(status); });
  return transfer;
}

std::shared_ptr<Transfer> Transfer::receive(Engine& engine, const LinkPtr& link, int tag, void* data, size_t size,
                                            size_t chunk) {
  auto transfer = std::make_shared<Transfer>();
  const size_t chunks = chunk_count(size, chunk);
  transfer->remaining_ = chunks;
  if (chunks == 0) transfer->completion_.complete(OpStatus::done);
  auto* bytes = static_cast<std::byte*>(data);
  for (size_t offset = 0; offset < size; offset += chunk)
    engine.receive(link, tag, bytes + offset, std::min(chunk, size - offset),
                   [transfer](OpStatus status, Bytes&&) { transfer->chunk_done(status); });
  return transfer;
}

void Transfer::chunk_done(OpStatus status) {
  if (status != OpStatus::done) {
    uint32_t expected = static_cast<uint32_t>(OpStatus::done);
    worst_.compare_exchange_strong(expected, static_cast<uint32_t>(status));
  }
  if (remaining_.fetch_sub(1) == 1) completion_.complete(static_cast<OpStatus>(worst_.load()));
}

}  // namespace hivecl::transport
