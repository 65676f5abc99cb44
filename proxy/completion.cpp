#include "proxy/completion.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "proxy/waiting.hpp"
#include "transport/polling.hpp"

namespace hivecl::proxy {

namespace {

using Action = std::function<void(cl_int)>;

// A failed command's own status: a wait or callback may report only that something failed.
cl_int reached_status(cl_event event, cl_int reported) {
  cl_int current = CL_COMPLETE;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof current, &current, nullptr) == CL_SUCCESS &&
      current < 0)
    return current;
  return reported;
}

void CL_CALLBACK run_action(cl_event event, cl_int status, void* user_data) {
  std::unique_ptr<Action> action(static_cast<Action*>(user_data));
  // PoCL reports the status asked for to a command that its failed wait list made fail.
  (*action)(status >= 0 ? reached_status(event, status) : status);
  clReleaseEvent(event);
}

void by_callback(cl_event event, cl_int status, Action action) {
  auto* heap_action = new Action(std::move(action));
  if (clSetEventCallback(event, status, run_action, heap_action) != CL_SUCCESS)
    run_action(event, CL_INVALID_EVENT, heap_action);
}

// The commands of one in-order queue complete in order: one thread waits for them in turn, as long
// as none of them may be held back (note_wait_list).
struct QueueWaiter {
  struct Pending {
    enum class What { event, finish, release } what;  // wait_then, when_finished, release_queue
    cl_event event;  // what == event
    Action action;   // what != release
  };
  std::mutex mutex;
  std::condition_variable more;
  std::deque<Pending> pending;
  bool serving = false;  // a Pending taken from `pending` is being served
  std::atomic<size_t> count{0};  // pending.size(), read without the lock while spinning
  bool nudged = false;           // a wait is likely soon: poll again (expect_wait)
};

// Waiters by native queue, and what may hold each queue back (note_wait_list), retained. Never
// destroyed: the waiters' threads may outlive static destruction.
struct Registry {
  std::mutex mutex;
  std::unordered_map<cl_command_queue, std::shared_ptr<QueueWaiter>> waiters;
  std::unordered_map<cl_command_queue, std::vector<cl_event>> holds;
  std::atomic<bool> some_held{false};  // !holds.empty(), read without the lock
};
Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

// The event's status if it has already completed or failed: no need to wait then.
bool already_ended(cl_event event, cl_int& status) {
  return clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
         status <= CL_COMPLETE;
}

// Whether a command of `queue` may still be held back; forgets the holds that have ended.
// Called with the registry's lock.
bool may_be_held(Registry& registry, cl_command_queue queue) {
  const auto found = registry.holds.find(queue);
  if (found == registry.holds.end()) return false;
  std::erase_if(found->second, [](cl_event hold) {
    cl_int status = CL_QUEUED;
    if (!already_ended(hold, status)) return false;
    clReleaseEvent(hold);
    return true;
  });
  if (!found->second.empty()) return true;
  registry.holds.erase(found);
  registry.some_held.store(!registry.holds.empty(), std::memory_order_release);
  return false;
}

void forget_holds(Registry& registry, cl_command_queue queue) {
  const auto found = registry.holds.find(queue);
  if (found == registry.holds.end()) return;
  for (cl_event hold : found->second) clReleaseEvent(hold);
  registry.holds.erase(found);
  registry.some_held.store(!registry.holds.empty(), std::memory_order_release);
}

// Whether `event`, which a command of `queue` waits for, may hold that command back
// indefinitely: a user event that has not ended, or a command of another queue that may be held
// (looked for only while some queue may be). A command of the same queue comes before it: if
// that one may be held, the queue already is.
bool may_hold(cl_command_queue queue, cl_event event, const std::unordered_set<cl_event>& user_events) {
  cl_int status = CL_QUEUED;
  if (user_events.contains(event)) return !already_ended(event, status);
  if (!registry().some_held.load(std::memory_order_acquire)) return false;
  cl_command_queue its_queue = nullptr;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof its_queue, &its_queue, nullptr) != CL_SUCCESS ||
      !its_queue || its_queue == queue || already_ended(event, status))
    return false;
  std::lock_guard registry_lock(registry().mutex);
  return may_be_held(registry(), its_queue);
}

constexpr auto idle_before_exit = std::chrono::seconds(2);
// Waits come in bursts (a transfer's chunks, a launch then clFinish): a short spin takes the next
// without the cost of a wake-up (about 5 us of clFinish's 16 on NVIDIA).
constexpr auto spin_for_more = std::chrono::microseconds(100);

void serve(cl_command_queue queue, const QueueWaiter::Pending& next) {
  switch (next.what) {
    case QueueWaiter::Pending::What::event:
      wait_then(next.event, next.action);
      clReleaseEvent(next.event);
      break;
    case QueueWaiter::Pending::What::finish:
      next.action(clFinish(queue));
      break;
    case QueueWaiter::Pending::What::release:
      clReleaseCommandQueue(queue);
      break;
  }
}

void serve_queue(cl_command_queue queue, std::shared_ptr<QueueWaiter> waiter) {
  while (true) {
    const auto more = [&] { return waiter->count.load(std::memory_order_acquire) != 0; };
    if (!transport::poll_for(more, spin_for_more))
      transport::poll_for([&] { return more() || !clients_waiting(); }, transport::longest_busy_poll);
    std::unique_lock lock(waiter->mutex);
    if (!waiter->more.wait_for(lock, idle_before_exit, [&] { return !waiter->pending.empty() || waiter->nudged; })) {
      // Leave only if nothing arrived meanwhile; the registry's lock comes first, as in add's caller.
      lock.unlock();
      std::lock_guard registry_lock(registry().mutex);
      lock.lock();
      if (!waiter->pending.empty()) continue;
      registry().waiters.erase(queue);
      return;
    }
    if (waiter->pending.empty()) {  // nudged
      waiter->nudged = false;
      continue;
    }
    QueueWaiter::Pending next = std::move(waiter->pending.front());
    waiter->pending.pop_front();
    waiter->count.fetch_sub(1, std::memory_order_relaxed);
    waiter->serving = true;
    lock.unlock();
    serve(queue, next);
    lock.lock();
    waiter->serving = false;
  }
}

// Completions of commands that may be held back for long (note_wait_list): one thread polls their
// statuses, backing off to a millisecond, so that none waits behind another, and a command that
// failed through its wait list is seen as clWaitForEvents sees it (PoCL 3.1 calls no callback
// for such a command).
class HeldPoller {
 public:
  static HeldPoller& get() {
    static auto* instance = new HeldPoller;  // never destroyed, as the registry
    return *instance;
  }
  void add(cl_event event, Action action) {
    {
      std::lock_guard lock(mutex_);
      arrived_.push_back({event, std::move(action)});
      if (!running_) {
        running_ = true;
        std::thread([this] { poll(); }).detach();
      }
    }
    more_.notify_one();
  }

 private:
  struct Held {
    cl_event event;
    Action action;
  };
  static constexpr std::chrono::microseconds first_pause{20}, longest_pause{1000};

  void poll() {
    std::vector<Held> held;
    std::chrono::microseconds pause = first_pause;
    auto idle_since = std::chrono::steady_clock::now();
    while (true) {
      {
        std::unique_lock lock(mutex_);
        more_.wait_for(lock, pause, [&] { return !arrived_.empty(); });
        std::move(arrived_.begin(), arrived_.end(), std::back_inserter(held));
        arrived_.clear();
        if (held.empty() && std::chrono::steady_clock::now() - idle_since > idle_before_exit) {
          running_ = false;
          return;
        }
      }
      const size_t before = held.size();
      std::erase_if(held, [](Held& item) {
        cl_int status = CL_QUEUED;
        if (!already_ended(item.event, status)) return false;
        item.action(status);
        clReleaseEvent(item.event);
        return true;
      });
      pause = held.size() < before ? first_pause : std::min(2 * pause, longest_pause);
      if (!held.empty()) idle_since = std::chrono::steady_clock::now();
    }
  }

  std::mutex mutex_;
  std::condition_variable more_;
  std::vector<Held> arrived_;
  bool running_ = false;
};

// The event's queue if it is an in-order one.
cl_command_queue in_order_queue(cl_event event) {
  cl_command_queue queue = nullptr;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof queue, &queue, nullptr) != CL_SUCCESS || !queue ||
      !is_in_order(queue))
    return nullptr;
  return queue;
}

void hand_to(QueueWaiter& waiter, QueueWaiter::Pending pending) {
  {
    std::lock_guard lock(waiter.mutex);
    waiter.pending.push_back(std::move(pending));
    waiter.count.fetch_add(1, std::memory_order_release);
  }
  waiter.more.notify_one();
}

// Hands `pending` to the queue's waiter thread, made if need be.
void by_waiter(Registry& registry, cl_command_queue queue, QueueWaiter::Pending pending) {
  auto& waiter = registry.waiters[queue];
  if (!waiter) {
    waiter = std::make_shared<QueueWaiter>();
    std::thread(serve_queue, queue, waiter).detach();
  }
  hand_to(*waiter, std::move(pending));
}

}  // namespace

bool is_in_order(cl_command_queue queue) {
  cl_command_queue_properties properties = 0;
  return clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties, nullptr) == CL_SUCCESS &&
         !(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
}

void wait_then(cl_event event, const Action& action) {
  const cl_int waited = clWaitForEvents(1, &event);
  action(waited == CL_SUCCESS ? CL_COMPLETE : reached_status(event, waited));
}

void expect_wait(cl_command_queue queue) {
  std::shared_ptr<QueueWaiter> waiter;
  {
    std::lock_guard registry_lock(registry().mutex);
    const auto found = registry().waiters.find(queue);
    if (found == registry().waiters.end()) return;
    waiter = found->second;
  }
  {
    std::lock_guard lock(waiter->mutex);
    waiter->nudged = true;
  }
  waiter->more.notify_one();
}

void note_wait_list(cl_command_queue queue, const std::vector<cl_event>& waits,
                    const std::unordered_set<cl_event>& user_events) {
  for (cl_event event : waits) {
    if (!may_hold(queue, event, user_events)) continue;
    clRetainEvent(event);
    std::lock_guard registry_lock(registry().mutex);
    registry().holds[queue].push_back(event);
    registry().some_held.store(true, std::memory_order_release);
  }
}

bool may_be_held(cl_command_queue queue) {
  if (!registry().some_held.load(std::memory_order_acquire)) return false;
  std::lock_guard registry_lock(registry().mutex);
  return may_be_held(registry(), queue);
}

// A clFinish waits for a held command natively too; the commands' own waits, handed over while
// the queue may be held, are polled for (HeldPoller) and do not wait behind it.
void when_finished(cl_command_queue queue, Action action) {
  std::lock_guard registry_lock(registry().mutex);
  by_waiter(registry(), queue, {.what = QueueWaiter::Pending::What::finish, .event = nullptr, .action = std::move(action)});
}

void release_queue(cl_command_queue queue) {
  {
    std::lock_guard registry_lock(registry().mutex);
    forget_holds(registry(), queue);
    const auto found = registry().waiters.find(queue);
    if (found != registry().waiters.end()) {
      QueueWaiter& waiter = *found->second;
      std::unique_lock lock(waiter.mutex);
      if (waiter.serving || !waiter.pending.empty()) {
        lock.unlock();
        return hand_to(waiter, {.what = QueueWaiter::Pending::What::release, .event = nullptr, .action = {}});
      }
    }
  }
  clReleaseCommandQueue(queue);
}

namespace {

// The completion of `event` (retained), a command of the in-order `queue`: its waiter thread
// waits for it, unless the queue may be held.
void complete_in_order(cl_command_queue queue, cl_event event, Action action) {
  {
    std::lock_guard registry_lock(registry().mutex);
    if (!may_be_held(registry(), queue))
      return by_waiter(registry(), queue,
                       {.what = QueueWaiter::Pending::What::event, .event = event, .action = std::move(action)});
  }
  clFlush(queue);  // as the waiter's clWaitForEvents would
  HeldPoller::get().add(event, std::move(action));
}

}  // namespace

void when_status(cl_event event, cl_int status, Action action) {
  if (cl_int reached = CL_QUEUED; status == CL_COMPLETE && already_ended(event, reached)) return action(reached);
  clRetainEvent(event);
  if (status == CL_COMPLETE) {
    if (cl_command_queue queue = in_order_queue(event)) return complete_in_order(queue, event, std::move(action));
  }
  by_callback(event, status, std::move(action));
}

void when_enqueued_complete(cl_command_queue queue, bool in_order, cl_event event, Action action) {
  clRetainEvent(event);
  if (in_order) return complete_in_order(queue, event, std::move(action));
  clFlush(queue);
  by_callback(event, CL_COMPLETE, std::move(action));
}

}  // namespace hivecl::proxy
