// Reports of detached reads (proxy/read_reports.hpp) against the native runtime: they go out
// once the commands of their queue enqueued before send() have ended, each queue on its own, in
// one batch per queue, and what a read keeps is held until then; on an in-order queue whose last
// read has an event of its own, once that event has completed.
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/read_reports.hpp"

using hivecl::proxy::ReadReports;

namespace {

struct Sent {
  std::mutex mutex;
  std::vector<std::pair<std::vector<uint64_t>, cl_int>> batches;

  bool has(const std::vector<uint64_t>& sequences) {
    std::lock_guard lock(mutex);
    return std::any_of(batches.begin(), batches.end(), [&](const auto& batch) {
      return batch.first == sequences && batch.second == CL_SUCCESS;
    });
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return batches.size();
  }
};

}  // namespace

TEST_CASE("Read reports go out after the commands before them on their queue, each queue on its own",
          "[reports]") {
  NativeQueue native;
  cl_command_queue other = native.new_queue();
  cl_event gate = native.new_user_event();
  REQUIRE(clEnqueueMarkerWithWaitList(native.queue, 1, &gate, nullptr) == CL_SUCCESS);  // a read held back
  Sent sent;
  ReadReports reports([&](const std::vector<uint64_t>& sequences, cl_int reported) {
    std::lock_guard lock(sent.mutex);
    sent.batches.emplace_back(sequences, reported);
  });
  auto kept = std::make_shared<int>(0);
  CHECK_FALSE(reports.any());
  reports.add(native.queue, 3, kept);
  reports.add(other, 4, kept);
  reports.add(native.queue, 5, kept);
  CHECK(reports.any());
  reports.send();
  CHECK_FALSE(reports.any());
  CHECK(eventually([&] { return sent.has({4}); }));
  CHECK(sent.count() == 1);
  CHECK(eventually([&] { return kept.use_count() == 3; }));  // the held queue's two reads keep it
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return sent.has({3, 5}); }));
  CHECK(eventually([&] { return kept.use_count() == 1; }));
  clReleaseEvent(gate);
  clReleaseCommandQueue(other);
}

TEST_CASE("Read reports wait for the last read's own event, which they hold, on an in-order queue", "[reports]") {
  NativeQueue native;
  cl_event gate = native.new_user_event();
  cl_event last_read = nullptr;  // stands for the queue's last read, held back by the gate
  REQUIRE(clEnqueueMarkerWithWaitList(native.queue, 1, &gate, &last_read) == CL_SUCCESS);
  Sent sent;
  ReadReports reports([&](const std::vector<uint64_t>& sequences, cl_int reported) {
    std::lock_guard lock(sent.mutex);
    sent.batches.emplace_back(sequences, reported);
  });
  auto kept = std::make_shared<int>(0);
  reports.add(native.queue, 3, kept);
  reports.add(native.queue, 5, kept, last_read);
  REQUIRE(clReleaseEvent(last_read) == CL_SUCCESS);  // the session may release it: the reports hold it
  reports.send();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(sent.count() == 0);
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return sent.has({3, 5}); }));
  CHECK(eventually([&] { return kept.use_count() == 1; }));
  // Reports never sent give their events back when they go (a session ending).
  {
    ReadReports unsent([](const std::vector<uint64_t>&, cl_int) {});
    cl_event marker = nullptr;
    REQUIRE(clEnqueueMarkerWithWaitList(native.queue, 0, nullptr, &marker) == CL_SUCCESS);
    unsent.add(native.queue, 7, kept, marker);
    REQUIRE(clReleaseEvent(marker) == CL_SUCCESS);
  }
  REQUIRE(clFinish(native.queue) == CL_SUCCESS);
  clReleaseEvent(gate);
}
