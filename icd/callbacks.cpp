#include "icd/callbacks.hpp"

namespace hivecl::icd {

// Never destroyed: their threads may still wait when the process exits.
TaskThread& TaskThread::callbacks() {
  static TaskThread* const thread = new TaskThread();
  return *thread;
}

TaskThread& TaskThread::moves() {
  static TaskThread* const thread = new TaskThread();
  return *thread;
}

TaskThread& TaskThread::read_ahead() {
  static TaskThread* const thread = new TaskThread();
  return *thread;
}

void TaskThread::post(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(task));
  if (!started_) {
    started_ = true;
    std::thread([this] { run(); }).detach();
  }
  ready_.notify_one();
}

void TaskThread::run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return !queue_.empty(); });
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace hivecl::icd
