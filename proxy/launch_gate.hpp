// The launch gate of a session: a tight burst of launches on an in-order queue is held
// behind a user event for a moment, so that the native runtime queues them instead of
// submitting each one at once. NVIDIA's runtime takes 12-15 µs to submit a launch, on the
// launching thread while the GPU has nothing queued, or on a thread of its own for commands
// that had to wait; queueing one behind a wait takes about 2 µs. Natively a program that
// launches short kernels back to back is bound by that submission (Smith-Waterman: 5 µs
// kernels, 12 µs a launch). Behind a gate the runtime's own thread submits at that same
// pace while the launching thread, which also does HiveCL's own work of each launch, keeps
// ahead of it: HiveCL's share is then off the GPU's path (docs/FINDINGS.md).
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace hivecl::proxy {

class LaunchGate {
 public:
  using Clock = std::chrono::steady_clock;
  // Slow launches in a row, each tight after the last, before a burst's first gate: handing
  // a gated burst to NVIDIA's own thread costs about 90 µs when a wait follows soon
  // (transpose at its default size, 10 launches and a clFinish: 0.21 -> 0.30 ms gated after
  // 8), which a burst this long wins back. Each later gate of the burst comes after fewer,
  // so that most of a long burst's launches stay queued (a first version that waited for
  // 256 before every gate gated few of Smith-Waterman's, docs/PERFORMANCE.md).
  static constexpr unsigned slow_launches_to_first_gate = 64;
  static constexpr unsigned slow_launches_to_gate = 8;

  // `slow`: how long a native launch takes when submitted at once (none: never gate; 0: gate
  // every burst of launches on one queue, however fast and far apart, from its ninth: tests).
  explicit LaunchGate(std::optional<std::chrono::microseconds> slow)
      : enabled_(slow.has_value()), slow_submission_(slow.value_or(std::chrono::microseconds{0})) {}
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;
  ~LaunchGate();

  // Called by the thread that makes the session's launches, around each native launch on
  // `queue`: the event the launch must also wait for (null: none), then whether it was
  // enqueued. A launch on a queue that may not be gated (`gated` false) ends a burst.
  cl_event before_launch(cl_command_queue queue, bool gated);
  void after_launch(bool enqueued);
  // The launching thread: the burst has ended (another request of the session, a wait, a read,
  // a release; the session's worker found no request; teardown). Opens a closed gate.
  void end_burst() {
    burst_queue_ = nullptr;
    slow_launches_ = 0;
    gated_in_burst_ = false;
    open();
  }

 private:
  // A new gate for `queue` (null for an out-of-order queue), armed once its launch is enqueued.
  cl_event make_gate(cl_command_queue queue);
  void arm(cl_event gate);
  bool start_keeper();
  void open() {
    if (closed_.load(std::memory_order_acquire)) open_closed();
  }
  void open_closed();
  void keep();  // the keeper thread: opens a gate left closed past its deadline

  const bool enabled_;
  const std::chrono::microseconds slow_submission_;
  // The launching thread's own record of the burst under way.
  cl_command_queue burst_queue_ = nullptr;
  Clock::time_point launch_started_{};
  Clock::time_point last_returned_{};
  unsigned slow_launches_ = 0;
  bool gated_in_burst_ = false;
  cl_event unarmed_gate_ = nullptr;  // given to the launch under way
  unsigned launches_behind_ = 0;
  // The gate, shared with the keeper.
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  std::condition_variable keeper_wake_;
  cl_event gate_ = nullptr;
  uint64_t generation_ = 0;  // of gate_: the keeper's deadline is that of the gate it saw
  Clock::time_point deadline_{};
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace hivecl::proxy
