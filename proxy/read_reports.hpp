// The statuses of reads that a session's client did not wait for (detached reads into a shared
// segment on an in-order queue, which the device writes straight into the client's memory):
// reported together, once the session's run of such reads ends, in one frame, after the last
// read's own event where the application asked for one (it is then the queue's last command),
// else after a marker on their queue, instead of one native event, one wait and one frame each.
// Through a proxy on the H100, waiting for each of a window of 64 KiB reads in turn (its waiter
// thread in clWaitForEvents while the worker enqueued the next) made every enqueue two to three
// times slower (docs/PERFORMANCE.md).
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace hivecl::proxy {

class ReadReports {
 public:
  // Sends `status` as the status of the reads `sequences` (ClientLink::send_statuses: one frame).
  using Send = std::function<void(const std::vector<uint64_t>& sequences, cl_int status)>;
  // How long a session's worker waits for the next request of a run before it sends the reports.
  static constexpr auto grace = std::chrono::microseconds(10);

  explicit ReadReports(Send send) : send_(std::move(send)) {}
  ReadReports(const ReadReports&) = delete;
  ReadReports& operator=(const ReadReports&) = delete;
  ~ReadReports();

  // Read `sequence` on `queue` (in order), reported once the commands of `queue` enqueued so far have ended
  // (after send()); `keep` (what the read uses, its segment) is held until then. `event`: the
  // read's native event, if it has one (retained here).
  void add(cl_command_queue queue, uint64_t sequence, std::shared_ptr<const void> keep, cl_event event = nullptr);
  bool any() const { return !by_queue_.empty(); }
  // Hands the last read's event, or else a marker after the reads, on each of their queues to the
  // queue's waiter thread (proxy/completion.hpp); its end sends their statuses, its own.
  void send();

 private:
  struct Reads {
    cl_command_queue queue;
    std::vector<uint64_t> sequences;
    std::vector<std::shared_ptr<const void>> kept;
    cl_event last_event = nullptr;  // the last read's, retained (none: it had none)
  };
  Send send_;
  std::vector<Reads> by_queue_;
};

}  // namespace hivecl::proxy
