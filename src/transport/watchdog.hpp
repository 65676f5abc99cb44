// Peer-death detection outside MPI. Every client keeps one TCP connection to each
// proxy it uses; nothing flows on it but a token at the start. When either process
// dies the kernel closes the connection and the other side sees it at once; when a
// whole node vanishes, TCP keepalive and the user timeout notice it within the
// configured peer timeout. At the start the proxy challenges the client to prove
// the cluster's shared secret (secret.hpp; without one configured, any answer
// passes) and answers with the client's place in line, or a refusal. When the client's
// turn comes it sends a token and a fresh MPI port name: the client connects to that port
// and echoes the token in its MPI Hello, which ties the socket to the session; only a
// client that passed the challenge has one.
//
// The turns serialise MPI connections: Open MPI 4.1's connect/accept exchanges its
// data under keys named after the port in ompi-server, so clients connecting to one port
// at once take each other's keys, and the proxy's accept waits for ever on a pairing that
// never completes (docs/FINDINGS.md). A port per turn also keeps a client that died in
// the middle of connecting from leaving its key behind for the next one.
//
// A client of a proxy on its own node needs no MPI at all (docs/PERFORMANCE.md: Open MPI's
// singleton start costs each process about 0.1 s): with its answer it sends its Hello, which
// names the shared-memory control channel it made and holds the challenge's nonce as the probe
// of its memory, and the proxy starts its session at once, every frame after that going through
// the channel and the bulk data through the client's own memory. A proxy that cannot serve it so
// puts it in line for an MPI turn instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
inline constexpr size_t max_mpi_port_bytes = 1024;  // Open MPI's MPI_MAX_PORT_NAME
inline constexpr size_t max_admission_hello_bytes = 64u << 10;  // a Hello frame is some 200 bytes
// The proxy's answers instead of a place in line: it started a session without MPI; the answer
// to its challenge was wrong. A connection closed without an answer was dropped (a client too
// slow to answer, a proxy stopping), and the client tries again.
inline constexpr uint32_t session_started_answer = UINT32_MAX;
inline constexpr uint32_t refused_answer = UINT32_MAX - 1;

// Proxy side: accepts watchdog connections and reports the loss of claimed ones.
class WatchdogServer {
 public:
  using OnLost = std::function<void(uint32_t key)>;
  // Starts a session without MPI for a client that sent this Hello frame in answer to the
  // challenge's `nonce`: its key, or nullopt (the client then waits in line for an MPI turn).
  using OnHello = std::function<std::optional<uint32_t>(const protocol::Bytes& nonce, protocol::Bytes&& hello)>;

  WatchdogServer() = default;
  WatchdogServer(const WatchdogServer&) = delete;
  WatchdogServer& operator=(const WatchdogServer&) = delete;
  ~WatchdogServer();

  // Listens on every address, on an ephemeral port; on_lost runs in the watchdog thread.
  // With a secret, only clients that prove it get a token or a session. on_hello runs there too.
  bool start(std::chrono::milliseconds peer_timeout, OnLost on_lost, std::optional<protocol::Bytes> secret = {},
             OnHello on_hello = {});
  void stop();
  uint16_t port() const { return port_; }
  // Ties the connection that received `token` to `key`; false if no such connection waits.
  bool claim(const protocol::Bytes& token, uint32_t key);
  // Closes the connection of `key` (the session ended): the client sees the proxy's side go away.
  void release(uint32_t key);
  // How long a granted token stays claimable: the time a connected client has to say Hello.
  std::chrono::milliseconds claim_window() const;

  // The turnstile, for the accept thread: blocks until a client waits in line (its
  // connection; -1 once the turnstile is closed).
  int wait_for_turn();
  // Gives that client its token and the port to connect to; false if it is gone.
  bool grant_turn(int fd, const std::string& mpi_port);
  // The accept of the granted turn returned; true if that turn's client died before it
  // did (what the accept returned is then the waker's connection, or a dead client's).
  bool end_turn();
  // True, once, when the client of the turn in progress died: its accept needs waking.
  bool turn_abandoned();
  // No more turns; true if one is in progress (its accept needs waking).
  bool close_turnstile();
  // No more clients: closes the turnstile and the listening socket, so that clients in line
  // and new ones fail at once; the clients of sessions stay watched.
  void stop_admitting();

 private:
  struct Pending {
    int fd;
    std::chrono::steady_clock::time_point since;
  };
  // A connection whose admission request (the answer to the challenge, the length of a Hello
  // frame, the frame) has not all arrived (watchdog thread only).
  struct Challenge {
    int fd;
    std::chrono::steady_clock::time_point since;
    std::string peer;
    protocol::Bytes nonce;
    protocol::Bytes request;
  };
  void run();
  void accept_one();
  // Reads what arrived of a challenge's admission request; false once the challenge is settled.
  bool read_request(Challenge& challenge);
  void admit(int fd);
  // Starts a session without MPI for the client at `fd`, or puts it in line.
  void start_session(int fd, const protocol::Bytes& nonce, protocol::Bytes&& hello);
  void watch_granted_turn(short revents);
  void forget_granted(int fd);  // under mutex_
  void drop_stale();
  void wake();

  std::chrono::milliseconds peer_timeout_{5000};
  OnLost on_lost_;
  OnHello on_hello_;
  std::optional<protocol::Bytes> secret_;
  std::vector<Challenge> challenged_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  bool stopping_ = false;
  std::map<std::string, Pending> unclaimed_;  // by token (as text: GCC 13 misreads byte-vector keys)
  std::map<uint32_t, int> claimed_;
  // The turnstile (mutex_): admitted clients in line, the granted one, its state.
  std::deque<int> in_line_;
  std::condition_variable turn_cv_;
  bool turnstile_closed_ = false;
  bool admitting_ = true;
  int granted_fd_ = -1;
  bool turn_in_progress_ = false;
  bool granted_client_died_ = false;
  bool abandonment_reported_ = false;
};

// Client side: one connection to a proxy, made before any MPI_Comm_connect (connecting
// over MPI to a dead port hangs for ever; a refused TCP connection says so at once).
class WatchdogConnection {
 public:
  // Tries each host in turn, answering the proxy's challenge with `secret` (empty: none),
  // then waits for its turn; nullopt when the proxy refused the answer, when none answers
  // within `timeout` (each of 3 attempts, for a proxy slowed by load), or the turn does not
  // come within `timeout` for each client ahead in line. With `hello`, which makes the Hello
  // frame for the challenge's nonce, the proxy may start the session at once instead
  // (session_started()).
  using HelloFor = std::function<protocol::Bytes(const protocol::Bytes& nonce)>;
  static std::optional<WatchdogConnection> open(const std::vector<std::string>& hosts, uint16_t port,
                                                std::chrono::milliseconds timeout,
                                                std::chrono::milliseconds peer_timeout,
                                                const protocol::Bytes& secret = {}, const HelloFor& hello = {});
  WatchdogConnection(WatchdogConnection&& other) noexcept;
  WatchdogConnection& operator=(WatchdogConnection&& other) noexcept;
  WatchdogConnection(const WatchdogConnection&) = delete;
  WatchdogConnection& operator=(const WatchdogConnection&) = delete;
  ~WatchdogConnection();

  int fd() const { return fd_; }
  const protocol::Bytes& token() const { return token_; }
  // The MPI port that the proxy opened for this client's turn.
  const std::string& mpi_port() const { return mpi_port_; }
  // The proxy took the Hello given to open() and started the session without MPI: its reply
  // comes through the control channel the Hello named; no token, no port.
  bool session_started() const { return session_started_; }
  // Whether the proxy closed this connection (it died, or gave this client up).
  bool peer_closed() const;

 private:
  WatchdogConnection(int fd, protocol::Bytes token, std::string mpi_port, bool session_started)
      : fd_(fd), token_(std::move(token)), mpi_port_(std::move(mpi_port)), session_started_(session_started) {}
  int fd_ = -1;
  protocol::Bytes token_;
  std::string mpi_port_;
  bool session_started_ = false;
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
