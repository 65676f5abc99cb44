// The statuses of reads that a session's client did not wait for (detached reads into a shared
// segment, which the device writes straight into the client's memory): reported together, after
// one marker on their queue, once the session's run of such reads ends, instead of one native
// event and one wait each. Through a proxy on the H100, waiting for each of a window of 64 KiB
// reads in turn (its waiter thread in clWaitForEvents while the worker enqueued the next) made
// every enqueue two to three times slower (docs/PERFORMANCE.md).
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <functional>
#include <utility>
#include <vector>

namespace hivecl::proxy {

class ReadReports {
 public:
  using Report = std::function<void(cl_int status)>;
  // How long a session's worker waits for the next request of a run before it sends the reports.
  static constexpr auto grace = std::chrono::microseconds(10);

  ReadReports() = default;
  ReadReports(const ReadReports&) = delete;
  ReadReports& operator=(const ReadReports&) = delete;

  // `report` runs, with the read's status, once the commands of `queue` enqueued so far have
  // ended (after send()); it holds what the read needs until then.
  void add(cl_command_queue queue, Report report);
  bool any() const { return !by_queue_.empty(); }
  // Puts a marker after the reads on each of their queues and hands it to the queue's waiter
  // thread (proxy/completion.hpp); its end runs the reports, with its status.
  void send();

 private:
  std::vector<std::pair<cl_command_queue, std::vector<Report>>> by_queue_;
};

}  // namespace hivecl::proxy
