#include "proxy/read_reports.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "proxy/completion.hpp"

namespace hivecl::proxy {

ReadReports::~ReadReports() {
  for (const Reads& reads : by_queue_)
    if (reads.last_event) clReleaseEvent(reads.last_event);
}

void ReadReports::add(cl_command_queue queue, uint64_t sequence, std::shared_ptr<const void> keep, cl_event event) {
  auto on = std::find_if(by_queue_.begin(), by_queue_.end(), [&](const Reads& reads) { return reads.queue == queue; });
  if (on == by_queue_.end()) on = by_queue_.insert(by_queue_.end(), Reads{.queue = queue, .sequences = {}, .kept = {}});
  on->sequences.push_back(sequence);
  on->kept.push_back(std::move(keep));
  if (event) clRetainEvent(event);
  if (on->last_event) clReleaseEvent(on->last_event);
  on->last_event = event;
}

// What the reports wait for: the last read's own event, if it has one (the queue's last
// command: no other request came since, or the run would have ended); else a marker, which with
// no wait list waits for every command enqueued before it (an enqueued marker cost about 5 us on
// NVIDIA). The queue runs in order (ReadReports::add).
void ReadReports::send() {
  for (Reads& reads : std::exchange(by_queue_, {})) {
    const cl_command_queue queue = reads.queue;
    cl_event ended_at = std::exchange(reads.last_event, nullptr);
    auto ended = std::make_shared<Reads>(std::move(reads));
    const auto report = [ended, send = send_](cl_int status) { send(ended->sequences, status < 0 ? status : CL_SUCCESS); };
    if (!ended_at) {
      if (const cl_int status = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &ended_at); status != CL_SUCCESS) {
        report(status);
        continue;
      }
    }
    when_enqueued_complete(queue, true, ended_at, report);
    clReleaseEvent(ended_at);
  }
}

}  // namespace hivecl::proxy
