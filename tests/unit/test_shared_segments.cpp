// The proxy's attached shared segments against a real OpenCL runtime (PoCL in CI): a segment
// that the client forgets stays mapped while commands that use its memory may still run.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/shared_segments.hpp"

using hivecl::proxy::AttachedSegment;
using hivecl::proxy::SharedSegments;

TEST_CASE("a forgotten segment stays mapped until the commands of the queues that used it have ended",
          "[shared-segment]") {
  NativeQueue native;
  constexpr size_t size = 1 << 20;
  auto client_side = hivecl::transport::SharedSegment::create(size);
  REQUIRE(client_side);
  std::memset(client_side->data(), 0x5a, size);
  const hivecl::protocol::SharedRange range{.segment = 7, .fd = client_side->fd(), .inode = client_side->inode(),
                                            .segment_size = size, .offset = 0};
  SharedSegments segments;
  std::weak_ptr<AttachedSegment> watched;
  cl_int status = CL_SUCCESS;
  cl_mem device_buffer = clCreateBuffer(native.context, CL_MEM_READ_WRITE, size, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_event gate = native.new_user_event();
  {
    auto attached = segments.get(::getpid(), range);
    watched = attached;
    std::byte* memory = attached->memory(native.context, 0, size);
    attached->used_by(native.queue);
    REQUIRE(clEnqueueWriteBuffer(native.queue, device_buffer, CL_FALSE, 0, size, memory, 1, &gate, nullptr) ==
            CL_SUCCESS);
  }
  // The application lets go of its queue too: the segment's hold on it keeps the marker possible.
  cl_command_queue queue = native.queue;
  clRetainCommandQueue(queue);
  clReleaseCommandQueue(native.queue);
  segments.forget(range.segment);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(watched.expired());  // the write has not even started

  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  REQUIRE(clFinish(queue) == CL_SUCCESS);
  CHECK(eventually([&] { return watched.expired(); }));
  std::vector<unsigned char> written(size);
  REQUIRE(clEnqueueReadBuffer(queue, device_buffer, CL_TRUE, 0, size, written.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  CHECK(written == std::vector<unsigned char>(size, 0x5a));
  native.queue = queue;  // released with the context by the fixture
  clReleaseEvent(gate);
  clReleaseMemObject(device_buffer);
}

TEST_CASE("a segment notes each queue that uses it once", "[shared-segment]") {
  NativeQueue native;
  constexpr size_t size = 64 << 10;
  auto client_side = hivecl::transport::SharedSegment::create(size);
  REQUIRE(client_side);
  const hivecl::protocol::SharedRange range{.segment = 8, .fd = client_side->fd(), .inode = client_side->inode(),
                                            .segment_size = size, .offset = 0};
  SharedSegments segments;
  auto attached = segments.get(::getpid(), range);
  for (int i = 0; i < 100; ++i) attached->used_by(native.queue);
  const auto queues = attached->take_queues();
  REQUIRE(queues.size() == 1);
  CHECK(queues.front() == native.queue);
  CHECK(attached->take_queues().empty());
  for (cl_command_queue queue : queues) clReleaseCommandQueue(queue);
}

TEST_CASE("a client's segment made at an address is mapped there, seen by the proxy's side, and refused where "
          "something is mapped already", "[shared-segment]") {
  const size_t size = 4 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // An address just freed, so free now (SVM mirrors use the proxy runtime's addresses this way).
  void* taken = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(taken != MAP_FAILED);
  REQUIRE(munmap(taken, size) == 0);
  auto placed = hivecl::transport::SharedSegment::create(size, "test-at", taken);
  REQUIRE(placed);
  CHECK(placed->data() == taken);
  std::memset(placed->data(), 0x3c, size);
  auto proxy_side = hivecl::transport::SharedSegment::attach(::getpid(), placed->fd(), placed->inode(), size);
  REQUIRE(proxy_side);
  CHECK(proxy_side->data() != placed->data());
  CHECK(std::to_integer<int>(proxy_side->data()[size - 1]) == 0x3c);
  // Where the placed segment is (and where a part of it is), no second one goes.
  CHECK_FALSE(hivecl::transport::SharedSegment::create(size, "test-at", taken));
  CHECK_FALSE(hivecl::transport::SharedSegment::create(size, "test-at", placed->data() + size / 2));
}
