#include "proxy/read_reports.hpp"

#include <algorithm>
#include <memory>

#include "proxy/completion.hpp"

namespace hivecl::proxy {

void ReadReports::add(cl_command_queue queue, Report report) {
  auto on = std::find_if(by_queue_.begin(), by_queue_.end(), [&](const auto& entry) { return entry.first == queue; });
  if (on == by_queue_.end()) on = by_queue_.insert(by_queue_.end(), {queue, {}});
  on->second.push_back(std::move(report));
}

// A marker with no wait list waits for every command enqueued before it, out of order too.
void ReadReports::send() {
  for (auto& [queue, reports] : std::exchange(by_queue_, {})) {
    auto ended = std::make_shared<std::vector<Report>>(std::move(reports));
    const auto report_all = [ended](cl_int status) {
      for (const Report& report : *ended) report(status < 0 ? status : CL_SUCCESS);
    };
    cl_event marker = nullptr;
    const cl_int status = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker);
    if (status != CL_SUCCESS) {
      report_all(status);
      continue;
    }
    clFlush(queue);
    when_complete(marker, report_all);
    clReleaseEvent(marker);
  }
}

}  // namespace hivecl::proxy
