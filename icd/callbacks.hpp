// The thread that runs the application's event callbacks: a HiveCL thread, neither the
// application's nor the MPI progress thread (a callback may call OpenCL, which needs it).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace hivecl::icd {

class CallbackThread {
 public:
  static CallbackThread& get();
  // Runs `callback` on the callback thread, after those posted before it.
  void post(std::function<void()> callback);

 private:
  CallbackThread() = default;
  [[noreturn]] void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool started_ = false;
};

}  // namespace hivecl::icd
