// Threads of HiveCL's own in the application that run work handed to them, one piece after the
// other: neither the application's threads nor the MPI progress thread (the work may call
// OpenCL, which needs that one).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace hivecl::icd {

class TaskThread {
 public:
  // The application's event callbacks and program notifications, and the relays of spanning contexts.
  static TaskThread& callbacks();
  // Spanning contexts: buffer data moved through this process, apart from the callbacks so
  // that a large move does not hold the application's callbacks back.
  static TaskThread& moves();
  // Spanning contexts: the reads of a move through this process, ahead of its writes (relay_pieces).
  static TaskThread& read_ahead();
  // Runs `task` on the thread, after those posted before it.
  void post(std::function<void()> task);

 private:
  TaskThread() = default;
  [[noreturn]] void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool started_ = false;
};

}  // namespace hivecl::icd
