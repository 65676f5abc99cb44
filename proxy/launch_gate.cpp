#include "proxy/launch_gate.hpp"

#include <system_error>
#include <utility>

#include "log.hpp"
#include "proxy/completion.hpp"

namespace hivecl::proxy {

namespace {

using namespace std::chrono_literals;

// The next launch began this soon after the last one returned: the launching thread does
// little else (in-process, the application's loop and HiveCL's own work of a launch).
constexpr auto tight_gap = 5us;
// Launches queued behind a gate before it opens: enough for the runtime's submitting thread
// to stay behind the launching one, as the native probe's 16 did.
constexpr unsigned launches_behind_gate = 16;
// A gate that nothing opened (the application computes, or polls memory, without a call
// to OpenCL) opens this long after it closed.
constexpr auto gate_deadline = 200us;

void release_gate(cl_event gate) {
  clSetUserEventStatus(gate, CL_COMPLETE);
  clReleaseEvent(gate);
}

}  // namespace

LaunchGate::~LaunchGate() {
  open();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  keeper_wake_.notify_one();
  if (keeper_.joinable()) keeper_.join();
}

cl_event LaunchGate::before_launch(cl_command_queue queue, bool gated) {
  if (!enabled_) return nullptr;
  if (!gated) {
    end_burst();  // and after_launch, finding no burst, leaves this launch out
    return nullptr;
  }
  launch_started_ = Clock::now();
  const bool every_burst = slow_submission_.count() == 0;
  if (queue != burst_queue_ || (!every_burst && launch_started_ - last_returned_ > tight_gap)) {
    end_burst();  // the burst behind the gate has ended
    burst_queue_ = queue;
    return nullptr;
  }
  const unsigned streak = gated_in_burst_ || every_burst ? slow_launches_to_gate : slow_launches_to_first_gate;
  if (closed_.load(std::memory_order_acquire) || slow_launches_ < streak) return nullptr;
  slow_launches_ = 0;
  unarmed_gate_ = make_gate(queue);
  return unarmed_gate_;
}

void LaunchGate::after_launch(bool enqueued) {
  if (!enabled_ || !burst_queue_) return;
  last_returned_ = Clock::now();
  // A refused launch submitted nothing: the streak begins again.
  slow_launches_ = enqueued && last_returned_ - launch_started_ >= slow_submission_ ? slow_launches_ + 1 : 0;
  if (cl_event gate = std::exchange(unarmed_gate_, nullptr)) {
    if (enqueued) {
      arm(gate);
      gated_in_burst_ = true;
    } else {
      release_gate(gate);  // nothing waits for it
    }
  } else if (closed_.load(std::memory_order_acquire) && ++launches_behind_ >= launches_behind_gate) {
    open();
  }
}

cl_event LaunchGate::make_gate(cl_command_queue queue) {
  cl_context context = nullptr;
  // Behind a gate an out-of-order queue's later launches would not wait.
  if (!is_in_order(queue) ||
      clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr) != CL_SUCCESS)
    return nullptr;
  cl_int status = CL_SUCCESS;
  const cl_event gate = clCreateUserEvent(context, &status);
  return status == CL_SUCCESS ? gate : nullptr;
}

bool LaunchGate::start_keeper() {
  std::lock_guard lock(mutex_);
  if (keeper_.joinable()) return true;
  try {
    keeper_ = std::thread([this] { keep(); });
    return true;
  } catch (const std::system_error& error) {
    log::warn("launch gate: no keeper thread (", error.what(), ")");
    return false;
  }
}

void LaunchGate::arm(cl_event gate) {
  if (!start_keeper()) {  // nothing would open it in time
    release_gate(gate);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    gate_ = gate;
    ++generation_;
    deadline_ = Clock::now() + gate_deadline;
    launches_behind_ = 0;
    closed_.store(true, std::memory_order_release);
  }
  keeper_wake_.notify_one();
  log::debug("launch gate closed");
}

void LaunchGate::open_closed() {
  cl_event gate = nullptr;
  {
    std::lock_guard lock(mutex_);
    gate = std::exchange(gate_, nullptr);
    closed_.store(false, std::memory_order_release);
  }
  // Outside the lock: setting it may run the runtime's callbacks of the commands behind it.
  if (!gate) return;
  release_gate(gate);
  log::debug("launch gate opened");
}

void LaunchGate::keep() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!gate_) {
      keeper_wake_.wait(lock);
      continue;
    }
    const uint64_t watched = generation_;
    const auto opened_otherwise = [&] { return stopping_ || generation_ != watched || !gate_; };
    if (keeper_wake_.wait_until(lock, deadline_, opened_otherwise)) continue;
    lock.unlock();
    open();
    lock.lock();
  }
}

}  // namespace hivecl::proxy
