#include "proxy/read_reports.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "proxy/completion.hpp"

namespace hivecl::proxy {

void ReadReports::add(cl_command_queue queue, uint64_t sequence, std::shared_ptr<const void> keep) {
  auto on = std::find_if(by_queue_.begin(), by_queue_.end(), [&](const Reads& reads) { return reads.queue == queue; });
  if (on == by_queue_.end()) on = by_queue_.insert(by_queue_.end(), Reads{.queue = queue, .sequences = {}, .kept = {}});
  on->sequences.push_back(sequence);
  on->kept.push_back(std::move(keep));
}

// A marker with no wait list waits for every command enqueued before it, out of order too.
void ReadReports::send() {
  for (Reads& reads : std::exchange(by_queue_, {})) {
    const cl_command_queue queue = reads.queue;
    auto ended = std::make_shared<Reads>(std::move(reads));
    const auto report = [ended, send = send_](cl_int status) { send(ended->sequences, status < 0 ? status : CL_SUCCESS); };
    cl_event marker = nullptr;
    const cl_int status = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker);
    if (status != CL_SUCCESS) {
      report(status);
      continue;
    }
    clFlush(queue);
    when_complete(marker, report);
    clReleaseEvent(marker);
  }
}

}  // namespace hivecl::proxy
