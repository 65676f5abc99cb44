#include "icd/callbacks.hpp"

namespace hivecl::icd {

CallbackThread& CallbackThread::get() {
  // Never destroyed: its thread may still wait when the process exits.
  static CallbackThread* const thread = new CallbackThread();
  return *thread;
}

void CallbackThread::post(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(callback));
  if (!started_) {
    started_ = true;
    std::thread([this] { run(); }).detach();
  }
  ready_.notify_one();
}

void CallbackThread::run() {
  while (true) {
    std::function<void()> callback;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return !queue_.empty(); });
      callback = std::move(queue_.front());
      queue_.pop_front();
    }
    callback();
  }
}

}  // namespace hivecl::icd
