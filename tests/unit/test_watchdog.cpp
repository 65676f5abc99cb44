// The watchdog's admission (transport/watchdog.hpp) over real TCP on this machine: a client
// that sends its Hello has its session started at once, or waits in line for an MPI turn
// when the proxy cannot start it so; the session's watched connection reports the client's loss.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "catch.hpp"
#include "loopback_listener.hpp"
#include "transport/secret.hpp"
#include "transport/watchdog.hpp"

using namespace hivecl::transport;
using hivecl::protocol::Bytes;
using namespace std::chrono_literals;

namespace {

// A proxy's watchdog whose OnHello starts "session" `key` for every Hello, or none (nullopt).
struct Proxy {
  explicit Proxy(std::optional<uint32_t> key, std::optional<Bytes> secret = {}) {
    REQUIRE(server.start(
        2000ms,
        [this](uint32_t lost) {
          std::lock_guard lock(mutex);
          lost_keys.push_back(lost);
          changed.notify_all();
        },
        std::move(secret),
        [this, key](const Bytes& nonce, Bytes&& hello) {
          std::lock_guard lock(mutex);
          nonces.push_back(nonce);
          hellos.push_back(std::move(hello));
          return key;
        }));
  }
  // Opens a connection whose Hello (if not empty) is `hello`; notes the nonce it was made for.
  std::optional<WatchdogConnection> open(const Bytes& hello, const Bytes& secret = {}) {
    WatchdogConnection::HelloFor hello_for;
    if (!hello.empty())
      hello_for = [this, hello](const Bytes& nonce) {
        std::lock_guard lock(mutex);
        nonces_given.push_back(nonce);
        return hello;
      };
    return WatchdogConnection::open({"127.0.0.1"}, server.port(), 2000ms, 2000ms, secret, hello_for);
  }
  bool lost(uint32_t key) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return std::find(lost_keys.begin(), lost_keys.end(), key) != lost_keys.end(); });
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Bytes> hellos;
  std::vector<Bytes> nonces;        // as OnHello got them
  std::vector<Bytes> nonces_given;  // as the client's Hello was made for them
  std::vector<uint32_t> lost_keys;
  WatchdogServer server;  // last: stopped first, while what its callbacks touch still exists
};

const Bytes hello_frame{std::byte{1}, std::byte{2}, std::byte{3}};

}  // namespace

TEST_CASE("a client's Hello starts its session at once, and its loss is reported", "[watchdog]") {
  Proxy proxy(7);
  auto connection = proxy.open(hello_frame);
  REQUIRE(connection);
  CHECK(connection->session_started());
  CHECK(connection->token().empty());
  CHECK(connection->mpi_port().empty());
  {
    std::lock_guard lock(proxy.mutex);
    REQUIRE(proxy.hellos.size() == 1);
    CHECK(proxy.hellos.front() == hello_frame);
    // The Hello was made for the challenge's nonce, which OnHello gets with it (the probe's proof).
    REQUIRE(proxy.nonces_given.size() == 1);
    CHECK(proxy.nonces_given.front().size() == auth_nonce_bytes);
    CHECK(proxy.nonces == proxy.nonces_given);
  }
  connection.reset();  // the client goes away
  CHECK(proxy.lost(7));
  proxy.server.stop();
}

TEST_CASE("a client whose session the proxy cannot start waits in line for an MPI turn", "[watchdog]") {
  Proxy proxy(std::nullopt);
  auto granted = std::async(std::launch::async, [&] {
    const int fd = proxy.server.wait_for_turn();
    return fd >= 0 && proxy.server.grant_turn(fd, "port of the turn");
  });
  auto connection = proxy.open(hello_frame);
  REQUIRE(connection);
  CHECK(granted.get());
  CHECK_FALSE(connection->session_started());
  CHECK(connection->mpi_port() == "port of the turn");
  CHECK(connection->token().size() == watchdog_token_bytes);
  CHECK(proxy.server.end_turn() == false);
  proxy.server.stop();
}

TEST_CASE("a client without a Hello waits in line; one with a wrong secret is refused", "[watchdog]") {
  const Bytes secret(32, std::byte{42});  // as long as a secret file's
  Proxy proxy(7, secret);
  auto granted = std::async(std::launch::async, [&] {
    const int fd = proxy.server.wait_for_turn();
    return fd >= 0 && proxy.server.grant_turn(fd, "port");
  });
  auto in_line = proxy.open({}, secret);
  REQUIRE(in_line);
  CHECK(granted.get());
  CHECK_FALSE(in_line->session_started());
  CHECK_FALSE(proxy.open(hello_frame, Bytes(32, std::byte{41})));
  std::lock_guard lock(proxy.mutex);
  CHECK(proxy.hellos.empty());  // neither reached OnHello
  proxy.server.end_turn();
  proxy.server.stop();
}

TEST_CASE("a Hello over the watchdog's limit is refused before it is read", "[watchdog]") {
  Proxy proxy(7);
  CHECK_FALSE(proxy.open(Bytes(max_admission_hello_bytes + 1, std::byte{0})));
  std::lock_guard lock(proxy.mutex);
  CHECK(proxy.hellos.empty());
  proxy.server.stop();
}

// Sessions that end while others start: the proxy's session closes its connection (release) as
// the watchdog notices its client gone, and the fd number goes at once to a new client. The
// watchdog once read a byte of that client's answer to the challenge there, and refused it.
TEST_CASE("clients that come and go while others connect are all admitted", "[watchdog]") {
  std::mutex mutex;
  // Keyed by the nonce's bytes as text: a vector<std::byte> key made GCC 13 warn falsely
  // (-Wstringop-overread in its comparison).
  std::map<std::string, uint32_t> key_of_nonce;
  const auto text = [](const Bytes& bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  uint32_t next_key = 1;
  WatchdogServer server;
  REQUIRE(server.start(2000ms, [](uint32_t) {}, {}, [&](const Bytes& nonce, Bytes&&) {
    std::lock_guard lock(mutex);
    key_of_nonce[text(nonce)] = next_key;
    return std::optional<uint32_t>(next_key++);
  }));
  constexpr int clients = 8;
  constexpr int sessions_each = 500;
  std::atomic<int> refused = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&] {
      for (int round = 0; round < sessions_each; ++round) {
        Bytes nonce;
        auto connection = WatchdogConnection::open({"127.0.0.1"}, server.port(), 2000ms, 2000ms, {},
                                                   [&](const Bytes& given) { return nonce = given, hello_frame; });
        if (!connection || !connection->session_started()) {
          ++refused;
          continue;
        }
        connection.reset();
        std::unique_lock lock(mutex);
        const uint32_t key = key_of_nonce.at(text(nonce));
        lock.unlock();
        server.release(key);
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(refused == 0);
  CHECK(next_key == clients * sessions_each + 1);
  server.stop();
}

TEST_CASE("a client that sends anything after its admission is reported lost", "[watchdog]") {
  Proxy proxy(7);
  auto connection = proxy.open(hello_frame);
  REQUIRE(connection);
  REQUIRE(connection->session_started());
  const char stray = 'x';
  REQUIRE(::send(connection->fd(), &stray, 1, MSG_NOSIGNAL) == 1);
  CHECK(proxy.lost(7));
  CHECK(connection->peer_closed());  // the proxy closed its side
  proxy.server.stop();
}

namespace {

// A watchdog of a proxy that answers every admission request with `answer` (none: it closes the
// connection without a word), counting the connections.
class ClosingWatchdog {
 public:
  explicit ClosingWatchdog(std::optional<uint32_t> answer) : answer_(answer) {
    thread_ = std::thread([this] { serve(); });
  }
  ~ClosingWatchdog() {
    ::shutdown(listener_.fd, SHUT_RDWR);  // ends the accept
    thread_.join();
  }
  uint16_t port() const { return listener_.port; }
  int connections() const { return connections_; }

 private:
  void serve() {
    while (true) {
      const int fd = ::accept(listener_.fd, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      const Bytes nonce(auth_nonce_bytes, std::byte{5});
      std::byte request[auth_answer_bytes + sizeof(uint32_t)];  // no Hello
      if (::send(fd, nonce.data(), nonce.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(nonce.size()) &&
          ::recv(fd, request, sizeof request, MSG_WAITALL) == sizeof request && answer_)
        ::send(fd, &*answer_, sizeof *answer_, MSG_NOSIGNAL);  // little-endian, as this machine
      ::close(fd);
    }
  }

  std::optional<uint32_t> answer_;
  LoopbackListener listener_;
  std::atomic<int> connections_ = 0;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a client refused by the proxy gives up; one whose connection was dropped tries again", "[watchdog]") {
  {
    ClosingWatchdog refusing(refused_answer);
    CHECK_FALSE(WatchdogConnection::open({"127.0.0.1"}, refusing.port(), 2000ms, 2000ms, {}, {}));
    CHECK(refusing.connections() == 1);
  }
  ClosingWatchdog dropping(std::nullopt);
  CHECK_FALSE(WatchdogConnection::open({"127.0.0.1"}, dropping.port(), 2000ms, 2000ms, {}, {}));
  CHECK(dropping.connections() == 3);  // WatchdogConnection::open's attempts
}
