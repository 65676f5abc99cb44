// The MPI progress engine. One thread per process owns every point-to-point MPI
// call (other threads only connect, accept and initialise), so no thread ever
// blocks in MPI on a single peer: Open MPI never reports a dead peer on a pending
// operation (ENVIRONMENT.md), and death is detected outside MPI (watchdog.hpp),
// after which forget() cancels everything of that peer without waiting on it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "protocol/codec.hpp"

namespace hivecl::transport {

enum class OpStatus : uint32_t { pending, done, failed, cancelled };

// One peer process, reached through an intercommunicator whose remote group is that process.
class Link {
 public:
  explicit Link(MPI_Comm comm) : comm_(comm) {}
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  MPI_Comm comm() const { return comm_; }
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // Incoming control frames are polled for only while some are expected (a client
  // waiting for replies), or always on a link that listens all the time (the proxy).
  void expect(int delta) { expected_.fetch_add(delta, std::memory_order_acq_rel); }

 private:
  friend class Engine;
  MPI_Comm comm_;
  std::atomic<bool> lost_{false};
  std::atomic<int> expected_{0};
};

using LinkPtr = std::shared_ptr<Link>;

// Lets a thread wait for one engine operation.
class Completion {
 public:
  void complete(OpStatus status);
  OpStatus wait() const;
  // Waits at most `timeout`; pending if it ran out (for shutdown paths only: it polls).
  OpStatus wait_for(std::chrono::milliseconds timeout) const;
  OpStatus status() const { return static_cast<OpStatus>(state_.load(std::memory_order_acquire)); }

 private:
  std::atomic<uint32_t> state_{static_cast<uint32_t>(OpStatus::pending)};
};

class Engine {
 public:
  // Called in the engine thread when an operation ends; `owned` is the buffer the engine held.
  using Done = std::function<void(OpStatus status, protocol::Bytes&& owned)>;
  using OnMessage = std::function<void(protocol::Bytes&& frame)>;

  struct Tuning {
    std::chrono::microseconds spin{2000};      // poll without sleeping this long after activity
    std::chrono::microseconds max_sleep{100};  // then sleep at most this long between polls
    uint64_t max_message_bytes = 256u << 20;   // larger control frames are dropped
  };

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Starts the engine thread. `setup` runs first in it (false: the engine stops at once),
  // `teardown` last, so MPI can be initialised and finalised by the thread that uses it.
  void start(Tuning tuning, std::function<bool()> setup = {}, std::function<void()> teardown = {});
  // Stops the thread after the operations in flight have been given up.
  void stop();
  // Waits until `setup` has run; its result.
  bool wait_started();

  // Hands every control frame of `link` on `tag` to on_message, in the engine thread.
  void listen(const LinkPtr& link, int tag, bool always, OnMessage on_message);
  void send(const LinkPtr& link, int tag, protocol::Bytes&& message, Done done = {});
  // `data` must stay valid until `done` runs.
  void send(const LinkPtr& link, int tag, const void* data, size_t size, Done done);
  void receive(const LinkPtr& link, int tag, void* data, size_t size, Done done);
  // As receive, but `done` runs only once the control frames of `link` that came before this
  // message are handed to their listeners (or after ordered_delivery_bound): MPI orders a
  // peer's messages per tag only, and a transfer's last message must not overtake the frames
  // sent before it (what the transfer's kernels printed).
  void receive_after_frames(const LinkPtr& link, int tag, void* data, size_t size, Done done);
  static constexpr std::chrono::milliseconds ordered_delivery_bound{10};
  // Gives up everything of `link`: operations end as cancelled, its communicator is freed.
  void forget(const LinkPtr& link);
  // As forget, once the sends asked for before have begun: a link whose peer is alive and waits
  // for its last frames (a session that ends by the client's Goodbye). MPI finishes them.
  void forget_after_sends(const LinkPtr& link);

 private:
  struct Operation {
    LinkPtr link;
    bool is_send = false;
    int tag = 0;
    void* data = nullptr;
    size_t size = 0;
    protocol::Bytes owned;
    Done done;
    bool probed = false;  // a receive of a frame MPI_Iprobe saw: under way, not cancellable
    bool after_frames = false;
  };
  // A receive_after_frames that ended, held until its link shows no frame to deliver at a few
  // looks in a row: a probe may miss a frame that has arrived until MPI makes progress (UCX).
  struct Deferred {
    Operation op;  // ended, done
    std::chrono::steady_clock::time_point until;
    int quiet_looks = 0;
  };
  static constexpr int quiet_looks_to_release = 3;
  struct Listener {
    LinkPtr link;
    int tag = 0;
    bool always = false;
    OnMessage on_message;
  };
  struct Forget {
    LinkPtr link;
  };
  using Command = std::variant<Operation, Listener, Forget>;
  // A dropped link's communicator, emptied and kept a while before it is freed: Open MPI gives
  // the next communicator the lowest free context id, and frames a killed client sent just
  // before it died were matched on the next client's ("Flush before Hello", its Hello lost).
  struct Quarantined {
    MPI_Comm comm;
    std::chrono::steady_clock::time_point until;
    std::vector<MPI_Request> discards;  // receives of its frames, not yet ended
  };

  void submit(Command&& command);
  void run(std::function<bool()> setup, std::function<void()> teardown);
  bool take_commands();
  void begin(Operation&& op);
  bool test_operations();
  bool poll_listeners();
  bool receiving_control(const Listener& listener) const;
  bool frames_waiting(const LinkPtr& link) const;
  void finish(size_t index, OpStatus status);
  void defer(Operation&& op);
  bool release_deferred(bool all);
  void drop_link(const LinkPtr& link);
  bool drain_quarantine(bool release_all);
  bool discard_frames(Quarantined& quarantined);
  bool has_attention() const;
  void idle_wait(std::chrono::steady_clock::time_point last_activity);
  void abandon_all();

  Tuning tuning_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Command> commands_;
  std::atomic<bool> has_commands_{false};
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  bool setup_ok_ = false;
  std::condition_variable started_cv_;
  std::vector<Quarantined> quarantine_;

  // Engine-thread state.
  std::vector<Operation> active_;
  std::vector<MPI_Request> requests_;  // parallel to active_
  std::vector<Listener> listeners_;
  std::vector<Deferred> deferred_;
  std::vector<protocol::Bytes> graveyard_;  // buffers MPI may still touch after a peer was lost
};

// Sends or receives `size` bytes as chunks of at most `chunk` bytes on one tag and lets a
// thread wait for all of them. The memory must stay valid until wait() returns.
class Transfer {
 public:
  static std::shared_ptr<Transfer> send(Engine& engine, const LinkPtr& link, int tag, const void* data, size_t size,
                                        size_t chunk);
  static std::shared_ptr<Transfer> receive(Engine& engine, const LinkPtr& link, int tag, void* data, size_t size,
                                           size_t chunk);
  // done when every chunk moved; failed or cancelled otherwise.
  OpStatus wait() const { return completion_.wait(); }
  OpStatus status() const { return completion_.status(); }

 private:
  void chunk_done(OpStatus status);
  static size_t chunk_count(size_t size, size_t chunk) { return size == 0 ? 0 : (size + chunk - 1) / chunk; }

  std::atomic<size_t> remaining_{0};
  std::atomic<uint32_t> worst_{static_cast<uint32_t>(OpStatus::done)};
  Completion completion_;
};

}  // namespace hivecl::transport
