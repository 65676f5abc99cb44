// The same-node control channel against this very process: the client's end made here and
// the proxy's end attached through /proc/self/fd, as a proxy attaches a client's.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "transport/control_channel.hpp"

using hivecl::protocol::Bytes;
using hivecl::transport::ControlChannel;
using namespace std::chrono_literals;

namespace {

// A frame whose bytes tell its writer and number, so a torn or reordered frame shows.
Bytes frame_of(uint32_t writer, uint32_t number, size_t size) {
  Bytes frame(std::max<size_t>(size, 8));
  std::memcpy(frame.data(), &writer, 4);
  std::memcpy(frame.data() + 4, &number, 4);
  for (size_t i = 8; i < frame.size(); ++i) frame[i] = static_cast<std::byte>(writer * 31 + number + i);
  return frame;
}

struct Received {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Bytes> frames;
  bool broken = false;

  bool wait_for(size_t count, std::chrono::seconds limit = 20s) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, limit, [&] { return frames.size() >= count || broken; }) && !broken;
  }
  bool wait_broken() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return broken; });
  }
};

struct Pair {
  std::unique_ptr<ControlChannel> client;
  std::unique_ptr<ControlChannel> proxy;
  Received at_proxy;
};

std::unique_ptr<Pair> open_pair(size_t capacity, std::chrono::microseconds spin = 100us, uint64_t max_frame = 64u << 20,
                                std::function<bool()> takers = {}) {
  auto pair = std::make_unique<Pair>();
  pair->client = ControlChannel::create(capacity);
  REQUIRE(pair->client);
  const auto& segment = pair->client->segment();
  pair->proxy = ControlChannel::attach(::getpid(), segment.fd(), segment.inode(), segment.size());
  REQUIRE(pair->proxy);
  Received& received = pair->at_proxy;
  pair->proxy->listen(
      [&received](Bytes&& frame) {
        std::lock_guard lock(received.mutex);
        received.frames.push_back(std::move(frame));
        received.changed.notify_all();
      },
      [&received] {
        std::lock_guard lock(received.mutex);
        received.broken = true;
        received.changed.notify_all();
      },
      max_frame, spin, {}, std::move(takers));
  return pair;
}

}  // namespace

TEST_CASE("Control channel: frames arrive whole and in order, larger ones than the ring too", "[control-channel]") {
  auto pair = open_pair(4096);
  const std::vector<size_t> sizes{0, 1, 8, 100, 4095, 4096, 4097, 1u << 20, 3};
  for (uint32_t i = 0; i < sizes.size(); ++i) REQUIRE(pair->client->send(frame_of(0, i, sizes[i])));
  REQUIRE(pair->at_proxy.wait_for(sizes.size()));
  std::lock_guard lock(pair->at_proxy.mutex);
  REQUIRE(pair->at_proxy.frames.size() == sizes.size());
  for (uint32_t i = 0; i < sizes.size(); ++i) CHECK(pair->at_proxy.frames[i] == frame_of(0, i, sizes[i]));
}

TEST_CASE("Control channel: frames of several threads do not interleave", "[control-channel]") {
  auto pair = open_pair(8192);
  constexpr uint32_t writers = 4, per_writer = 500;
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      for (uint32_t n = 0; n < per_writer; ++n) pair->client->send(frame_of(w, n, 16 + (n * 97) % 3000));
    });
  for (auto& thread : threads) thread.join();
  REQUIRE(pair->at_proxy.wait_for(writers * per_writer));
  std::lock_guard lock(pair->at_proxy.mutex);
  std::vector<uint32_t> next(writers, 0);
  for (const Bytes& frame : pair->at_proxy.frames) {
    uint32_t writer = 0, number = 0;
    std::memcpy(&writer, frame.data(), 4);
    std::memcpy(&number, frame.data() + 4, 4);
    REQUIRE(writer < writers);
    CHECK(number == next[writer]);  // each writer's frames in its order
    CHECK(frame == frame_of(writer, number, 16 + (number * 97) % 3000));
    next[writer] = number + 1;
  }
}

// The client's thread that waits for a reply, and the proxy's worker, take frames themselves
// (try_take) beside the reader: every frame must be handed on once, whole and in order.
TEST_CASE("Control channel: a thread taking frames beside the reader loses, reorders and breaks nothing",
          "[control-channel]") {
  std::atomic<bool> taking{true};
  auto pair = open_pair(4096, 100us, 64u << 20, [&] { return taking.load(); });
  constexpr uint32_t count = 20000;
  const auto size_of = [](uint32_t number) -> size_t { return 8 + (number * 37) % 700; };
  std::thread sender([&] {
    for (uint32_t number = 0; number < count; ++number)
      REQUIRE(pair->client->send(frame_of(0, number, size_of(number))));
  });
  size_t taken = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pair->proxy->try_take()) ++taken;
    std::lock_guard lock(pair->at_proxy.mutex);
    if (pair->at_proxy.frames.size() == count || pair->at_proxy.broken) break;
  }
  taking = false;
  sender.join();
  REQUIRE(pair->at_proxy.wait_for(count));
  CHECK(taken > 0);
  std::lock_guard lock(pair->at_proxy.mutex);
  REQUIRE(pair->at_proxy.frames.size() == count);
  for (uint32_t number = 0; number < count; ++number)
    CHECK(pair->at_proxy.frames[number] == frame_of(0, number, size_of(number)));
}

TEST_CASE("Control channel: a taker takes an empty frame as the reader would", "[control-channel]") {
  std::atomic<bool> taking{true};
  auto pair = open_pair(4096, 100us, 64u << 20, [&] { return taking.load(); });
  REQUIRE(pair->client->send({}));
  REQUIRE(pair->client->send(frame_of(3, 1, 16)));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    pair->proxy->try_take();
    std::lock_guard lock(pair->at_proxy.mutex);
    if (pair->at_proxy.frames.size() == 2) break;
  }
  taking = false;
  REQUIRE(pair->at_proxy.wait_for(2));
  std::lock_guard lock(pair->at_proxy.mutex);
  CHECK(pair->at_proxy.frames[0].empty());
  CHECK(pair->at_proxy.frames[1] == frame_of(3, 1, 16));
}

TEST_CASE("Control channel: a sleeping reader is woken by a frame, and by close", "[control-channel]") {
  auto pair = open_pair(4096, 0us);  // sleeps at once
  std::this_thread::sleep_for(100ms);
  REQUIRE(pair->client->send(frame_of(1, 1, 64)));
  REQUIRE(pair->at_proxy.wait_for(1, 5s));
  const auto start = std::chrono::steady_clock::now();
  pair->proxy.reset();  // closes and joins its sleeping reader
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("Control channel: replies flow back on the other ring", "[control-channel]") {
  auto pair = open_pair(4096);
  Received at_client;
  pair->client->listen(
      [&](Bytes&& frame) {
        std::lock_guard lock(at_client.mutex);
        at_client.frames.push_back(std::move(frame));
        at_client.changed.notify_all();
      },
      [] {}, 1u << 20, 100us);
  REQUIRE(pair->proxy->send(frame_of(2, 7, 300)));
  REQUIRE(at_client.wait_for(1));
  std::lock_guard lock(at_client.mutex);
  CHECK(at_client.frames[0] == frame_of(2, 7, 300));
}

TEST_CASE("Control channel: a peer's impossible count or oversized frame ends the channel, not the reader's process",
          "[control-channel]") {
  SECTION("a written count beyond the ring") {
    auto pair = open_pair(4096);
    uint64_t forged = 1u << 20;
    std::memcpy(pair->client->segment().data(), &forged, sizeof forged);  // the client-to-proxy ring's count
    CHECK(pair->at_proxy.wait_broken());
  }
  SECTION("a written count beyond the ring while a taker polls") {
    std::atomic<bool> taking{true};
    auto pair = open_pair(4096, 100us, 64u << 20, [&] { return taking.load(); });
    std::thread taker([&] {
      while (taking) pair->proxy->try_take();
    });
    uint64_t forged = 1u << 20;
    std::memcpy(pair->client->segment().data(), &forged, sizeof forged);
    CHECK(pair->at_proxy.wait_broken());
    taking = false;
    taker.join();
    CHECK(pair->at_proxy.frames.empty());
  }
  SECTION("a frame over the reader's limit") {
    auto pair = open_pair(4096, 100us, 1000);
    REQUIRE(pair->client->send(frame_of(0, 0, 2000)));
    CHECK(pair->at_proxy.wait_broken());
    CHECK(pair->at_proxy.frames.empty());
  }
  // The reader has taken the oversized frame's length when it finds it too long: a taker must
  // not then read the frame's own bytes as frames (zeros: empty frames). Many channels, since
  // the taker has to come in the moment the reader lets go of the ring.
  SECTION("a frame over the reader's limit while a taker polls") {
    for (int round = 0; round < 300; ++round) {
      std::atomic<bool> taking{true};
      auto pair = open_pair(4096, 100us, 1000, [&] { return taking.load(); });
      std::thread taker([&] {
        while (taking) pair->proxy->try_take();
      });
      CHECK(pair->client->send(Bytes(2000)));
      CHECK(pair->at_proxy.wait_broken());
      taking = false;
      taker.join();
      std::lock_guard lock(pair->at_proxy.mutex);
      REQUIRE(pair->at_proxy.frames.empty());
    }
  }
  SECTION("a read count beyond what was written") {
    auto pair = open_pair(4096);
    uint64_t forged = 12345;
    std::memcpy(pair->client->segment().data() + 64, &forged, sizeof forged);  // the proxy's read count, forged
    CHECK_FALSE(pair->client->send(frame_of(0, 0, 8)));  // the writer refuses to trust it
  }
}

TEST_CASE("Control channel: only a segment of a channel's shape attaches", "[control-channel]") {
  auto client = ControlChannel::create(4096);
  REQUIRE(client);
  const auto& segment = client->segment();
  CHECK_FALSE(ControlChannel::attach(::getpid(), segment.fd(), segment.inode() + 1, segment.size()));
  CHECK_FALSE(ControlChannel::attach(::getpid(), segment.fd(), segment.inode(), segment.size() + 1));
  CHECK_FALSE(ControlChannel::attach(::getpid(), segment.fd(), segment.inode(), 100));
  CHECK_FALSE(ControlChannel::attach(::getpid(), 9999, segment.inode(), segment.size()));
  // Its size is sealed: the client cannot shrink it under the proxy's mapping (SIGBUS there).
  CHECK(::ftruncate(segment.fd(), 0) != 0);
  // A file of the right shape whose size is not sealed is refused.
  const int unsealed = ::memfd_create("unsealed", MFD_CLOEXEC);
  REQUIRE(unsealed >= 0);
  REQUIRE(::ftruncate(unsealed, static_cast<off_t>(segment.size())) == 0);
  struct stat info {};
  REQUIRE(::fstat(unsealed, &info) == 0);
  CHECK_FALSE(ControlChannel::attach(::getpid(), unsealed, info.st_ino, segment.size()));
  ::close(unsealed);
}
