// Peer-death detection outside MPI. Every client keeps one TCP connection to each
// proxy it uses; nothing flows on it but a token at the start. When either process
// dies the kernel closes the connection and the other side sees it at once; when a
// whole node vanishes, TCP keepalive and the user timeout notice it within the
// configured peer timeout. At the start the proxy challenges the client to prove
// the cluster's shared secret (secret.hpp; without one configured, any answer
// passes), then sends a token, which the client echoes in its MPI Hello: it ties
// the socket to the session, and only a client that passed the challenge has one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/codec.hpp"

namespace hivecl::transport {

inline constexpr size_t watchdog_token_bytes = 16;

// Proxy side: accepts watchdog connections and reports the loss of claimed ones.
class WatchdogServer {
 public:
  using OnLost = std::function<void(uint32_t key)>;

  WatchdogServer() = default;
  WatchdogServer(const WatchdogServer&) = delete;
  WatchdogServer& operator=(const WatchdogServer&) = delete;
  ~WatchdogServer();

  // Listens on every address, on an ephemeral port; on_lost runs in the watchdog thread.
  // With a secret, only clients that prove it get a token.
  bool start(std::chrono::milliseconds peer_timeout, OnLost on_lost, std::optional<protocol::Bytes> secret = {});
  void stop();
  uint16_t port() const { return port_; }
  // Ties the connection that received `token` to `key`; false if no such connection waits.
  bool claim(const protocol::Bytes& token, uint32_t key);
  // Closes the connection of `key` (the session ended): the client sees the proxy's side go away.
  void release(uint32_t key);

 private:
  struct Pending {
    int fd;
    std::chrono::steady_clock::time_point since;
  };
  // A connection whose answer to the challenge has not all arrived (watchdog thread only).
  struct Challenge {
    int fd;
    std::chrono::steady_clock::time_point since;
    std::string peer;
    protocol::Bytes nonce;
    protocol::Bytes answer;
  };
  void run();
  void accept_one();
  // Reads what arrived of a challenge's answer; false once the challenge is settled.
  bool read_answer(Challenge& challenge);
  void admit(int fd);
  void drop_stale();
  void wake();

  std::chrono::milliseconds peer_timeout_{5000};
  OnLost on_lost_;
  std::optional<protocol::Bytes> secret_;
  std::vector<Challenge> challenged_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  bool stopping_ = false;
  std::map<protocol::Bytes, Pending> unclaimed_;
  std::map<uint32_t, int> claimed_;
};

// Client side: one connection to a proxy, made before any MPI_Comm_connect (connecting
// over MPI to a dead port hangs for ever; a refused TCP connection says so at once).
class WatchdogConnection {
 public:
  // Tries each host in turn, answering the proxy's challenge with `secret` (empty: none);
  // nullopt when none answers with a token within `timeout`, or the proxy refused the answer.
  static std::optional<WatchdogConnection> open(const std::vector<std::string>& hosts, uint16_t port,
                                                std::chrono::milliseconds timeout,
                                                std::chrono::milliseconds peer_timeout,
                                                const protocol::Bytes& secret = {});
  WatchdogConnection(WatchdogConnection&& other) noexcept;
  WatchdogConnection& operator=(WatchdogConnection&& other) noexcept;
  WatchdogConnection(const WatchdogConnection&) = delete;
  WatchdogConnection& operator=(const WatchdogConnection&) = delete;
  ~WatchdogConnection();

  int fd() const { return fd_; }
  const protocol::Bytes& token() const { return token_; }

 private:
  WatchdogConnection(int fd, protocol::Bytes token) : fd_(fd), token_(std::move(token)) {}
  int fd_ = -1;
  protocol::Bytes token_;
};

// Client side: watches the connections of every proxy in one thread, which sleeps in poll().
class WatchdogMonitor {
 public:
  using OnLost = std::function<void()>;

  WatchdogMonitor();
  WatchdogMonitor(const WatchdogMonitor&) = delete;
  WatchdogMonitor& operator=(const WatchdogMonitor&) = delete;
  ~WatchdogMonitor();

  // on_lost runs once, in the monitor thread, when the connection breaks. The monitor owns it.
  void watch(WatchdogConnection connection, OnLost on_lost);
  // Closes every connection without reporting them lost (the process is shutting down).
  void stop();

 private:
  struct Watched {
    WatchdogConnection connection;
    OnLost on_lost;
  };
  void run();

  int wake_pipe_[2] = {-1, -1};
  std::mutex mutex_;
  bool stopping_ = false;
  std::vector<Watched> watched_;
  std::thread thread_;
};

// Applies the peer timeout to a TCP socket: keepalive probes and a user timeout.
void set_peer_timeout(int fd, std::chrono::milliseconds peer_timeout);

// IPv4 addresses of this node, non-loopback first, loopback last.
std::vector<std::string> local_addresses();

}  // namespace hivecl::transport
