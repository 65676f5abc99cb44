#include "transport/watchdog.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "log.hpp"
#include "transport/secret.hpp"

namespace hivecl::transport {

using protocol::Bytes;
using Clock = std::chrono::steady_clock;

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool make_pipe(int fds[2]) { return ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0; }

void drain_pipe(int fd) {
  char buffer[64];
  while (::read(fd, buffer, sizeof buffer) > 0) {
  }
}

void poke(int fd) {
  const char byte = 1;
  ssize_t ignored = ::write(fd, &byte, 1);
  (void)ignored;
}

// A token as the key of unclaimed_.
std::string token_key(const Bytes& token) {
  return std::string(reinterpret_cast<const char*>(token.data()), token.size());
}

// True when the peer closed the connection, it failed, or the peer sent something: nothing more
// is ever sent on it, so bytes are a broken peer's (peeked, not read: were they left, poll would
// report them at once again and again).
bool connection_broken(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

bool write_all(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

enum class Read { done, closed, timed_out };

Read read_exactly(int fd, void* data, size_t size, Clock::time_point deadline) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0) return Read::timed_out;
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return Read::timed_out;
    const ssize_t n = ready < 0 ? -1 : ::recv(fd, bytes, size, 0);
    if (n <= 0) return Read::closed;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return Read::done;
}

// Small integers of the handshake travel little-endian.
template <class T>
void append_little_endian(Bytes& bytes, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) bytes.push_back(static_cast<std::byte>(value >> (8 * i)));
}

template <class T>
T from_little_endian(const std::byte* bytes) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(std::to_integer<T>(bytes[i]) << (8 * i));
  return value;
}

// The proxy's answer to an admission request: a place in line, or one of the answers instead.
bool send_answer(int fd, uint32_t answer) {
  Bytes bytes;
  append_little_endian<uint32_t>(bytes, answer);
  return write_all(fd, bytes.data(), bytes.size());
}

// Non-blocking connect with a deadline; the socket is blocking again on success.
int connect_with_timeout(const std::string& host, uint16_t port, Clock::time_point deadline) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return -1;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS) return close_fd(fd), -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof error;
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0)
      return close_fd(fd), -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

void set_peer_timeout(int fd, std::chrono::milliseconds peer_timeout) {
  const int seconds = std::max<int>(1, static_cast<int>(peer_timeout.count() / 3000));
  const int enable = 1;
  const int probes = 2;
  const unsigned user_timeout = static_cast<unsigned>(peer_timeout.count());
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &enable, sizeof enable);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &seconds, sizeof seconds);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &seconds, sizeof seconds);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> external;
  std::vector<std::string> loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* entry = list; entry; entry = entry->ifa_next) {
      if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET || !(entry->ifa_flags & IFF_UP)) continue;
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr, text, sizeof text);
      ((entry->ifa_flags & IFF_LOOPBACK) ? loopback : external).push_back(text);
    }
    ::freeifaddrs(list);
  }
  external.insert(external.end(), loopback.begin(), loopback.end());
  if (external.empty()) external.push_back("127.0.0.1");
  return external;
}

// --- WatchdogServer ------------------------------------------------------------------

WatchdogServer::~WatchdogServer() { stop(); }

bool WatchdogServer::start(std::chrono::milliseconds peer_timeout, OnLost on_lost, std::optional<Bytes> secret,
                           OnHello on_hello) {
  peer_timeout_ = peer_timeout;
  on_lost_ = std::move(on_lost);
  on_hello_ = std::move(on_hello);
  secret_ = std::move(secret);
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof address;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0 || !make_pipe(wake_pipe_)) {
    log::error("watchdog: cannot listen: ", std::strerror(errno));
    return false;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { run(); });
  return true;
}

void WatchdogServer::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || !thread_.joinable()) return;
    stopping_ = true;
  }
  wake();
  thread_.join();
  for (auto& challenge : challenged_) close_fd(challenge.fd);
  challenged_.clear();
  close_turnstile();
  for (auto& [token, pending] : unclaimed_) close_fd(pending.fd);
  for (auto& [key, fd] : claimed_) close_fd(fd);
  unclaimed_.clear();
  claimed_.clear();
  close_fd(listen_fd_);
  close_fd(wake_pipe_[0]);
  close_fd(wake_pipe_[1]);
}

void WatchdogServer::wake() { poke(wake_pipe_[1]); }

bool WatchdogServer::claim(const Bytes& token, uint32_t key) {
  {
    std::lock_guard lock(mutex_);
    const auto it = unclaimed_.find(token_key(token));
    if (it == unclaimed_.end()) return false;
    claimed_[key] = it->second.fd;
    unclaimed_.erase(it);
  }
  wake();
  return true;
}

void WatchdogServer::release(uint32_t key) {
  {
    std::lock_guard lock(mutex_);
    const auto it = claimed_.find(key);
    if (it == claimed_.end()) return;
    forget_granted(it->second);
    close_fd(it->second);
    claimed_.erase(it);
  }
  wake();
}

// The granted turn's connection is being closed: it is no longer watched by its fd number.
void WatchdogServer::forget_granted(int fd) {
  if (fd == granted_fd_) granted_fd_ = -1;
}

namespace {

Bytes random_bytes(size_t size) {
  Bytes bytes(size);
  if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) bytes.clear();
  return bytes;
}

std::string peer_address(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

}  // namespace

void WatchdogServer::accept_one() {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_CLOEXEC);
  if (fd < 0) return;
  set_peer_timeout(fd, peer_timeout_);
  Bytes nonce = random_bytes(auth_nonce_bytes);
  if (nonce.empty() || !write_all(fd, nonce.data(), nonce.size())) {
    close_fd(fd);
    return;
  }
  challenged_.push_back(Challenge{fd, Clock::now(), peer_address(address), std::move(nonce), {}});
}

namespace {

constexpr size_t fixed_request_bytes = auth_answer_bytes + sizeof(uint32_t);  // the answer, the Hello's length

// The bytes of an admission request still to come; SIZE_MAX when its Hello would be too large.
size_t request_bytes_missing(const Bytes& request) {
  if (request.size() < fixed_request_bytes) return fixed_request_bytes - request.size();
  const uint32_t hello = from_little_endian<uint32_t>(request.data() + auth_answer_bytes);
  if (hello > max_admission_hello_bytes) return SIZE_MAX;
  return fixed_request_bytes + hello - request.size();
}

}  // namespace

bool WatchdogServer::read_request(Challenge& challenge) {
  std::byte buffer[4096];
  const ssize_t n = ::recv(challenge.fd, buffer, std::min(request_bytes_missing(challenge.request), sizeof buffer),
                           MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (n <= 0) {
    close_fd(challenge.fd);
    return false;
  }
  challenge.request.insert(challenge.request.end(), buffer, buffer + n);
  const size_t missing = request_bytes_missing(challenge.request);
  if (missing == SIZE_MAX) {
    log::warn("watchdog: refused the client at ", challenge.peer, ": its Hello is over ", max_admission_hello_bytes,
              " bytes");
    close_fd(challenge.fd);
    return false;
  }
  if (missing != 0) return true;
  const Bytes answer(challenge.request.begin(), challenge.request.begin() + auth_answer_bytes);
  if (secret_ && !auth_answer_matches(auth_answer(*secret_, challenge.nonce), answer)) {
    log::warn("watchdog: refused the client at ", challenge.peer, ": wrong or missing shared secret");
    send_answer(challenge.fd, refused_answer);
    close_fd(challenge.fd);
    return false;
  }
  Bytes hello(challenge.request.begin() + fixed_request_bytes, challenge.request.end());
  if (hello.empty()) {
    admit(challenge.fd);
  } else {
    start_session(challenge.fd, challenge.nonce, std::move(hello));
  }
  return false;
}

void WatchdogServer::start_session(int fd, const Bytes& nonce, Bytes&& hello) {
  const std::optional<uint32_t> key = on_hello_ ? on_hello_(nonce, std::move(hello)) : std::nullopt;
  if (!key) return admit(fd);
  {
    std::lock_guard lock(mutex_);
    if (send_answer(fd, session_started_answer)) {
      claimed_[*key] = fd;
      return;
    }
  }
  close_fd(fd);
  on_lost_(*key);
}

// A client that proved the secret learns how many clients are ahead of it and waits in line.
void WatchdogServer::admit(int fd) {
  std::lock_guard lock(mutex_);
  if (!send_answer(fd, static_cast<uint32_t>(in_line_.size() + (turn_in_progress_ ? 1 : 0)))) {
    close_fd(fd);
    return;
  }
  in_line_.push_back(fd);
  turn_cv_.notify_one();
}

int WatchdogServer::wait_for_turn() {
  std::unique_lock lock(mutex_);
  turn_cv_.wait(lock, [&] { return turnstile_closed_ || !in_line_.empty(); });
  if (turnstile_closed_) return -1;
  const int fd = in_line_.front();
  in_line_.pop_front();
  return fd;
}

bool WatchdogServer::grant_turn(int fd, const std::string& mpi_port) {
  Bytes message = random_bytes(watchdog_token_bytes);
  const Bytes token = message;
  append_little_endian<uint16_t>(message, static_cast<uint16_t>(mpi_port.size()));
  for (const char c : mpi_port) message.push_back(static_cast<std::byte>(c));
  // Under the lock: a turn is either refused once the turnstile closed, or in progress for it.
  std::lock_guard lock(mutex_);
  if (turnstile_closed_ || token.empty() || mpi_port.size() > max_mpi_port_bytes || connection_broken(fd) ||
      !write_all(fd, message.data(), message.size())) {
    close_fd(fd);
    return false;
  }
  unclaimed_[token_key(token)] = Pending{fd, Clock::now()};
  granted_fd_ = fd;
  turn_in_progress_ = true;
  granted_client_died_ = false;
  abandonment_reported_ = false;
  wake();  // the watchdog thread watches the granted client from now on
  return true;
}

bool WatchdogServer::end_turn() {
  std::lock_guard lock(mutex_);
  turn_in_progress_ = false;
  granted_fd_ = -1;
  return std::exchange(granted_client_died_, false);
}

bool WatchdogServer::turn_abandoned() {
  std::lock_guard lock(mutex_);
  if (!turn_in_progress_ || !granted_client_died_ || abandonment_reported_) return false;
  abandonment_reported_ = true;
  return true;
}

bool WatchdogServer::close_turnstile() {
  std::lock_guard lock(mutex_);
  turnstile_closed_ = true;
  for (int& fd : in_line_) close_fd(fd);
  in_line_.clear();
  turn_cv_.notify_all();
  return turn_in_progress_;
}

void WatchdogServer::stop_admitting() {
  close_turnstile();
  std::lock_guard lock(mutex_);
  admitting_ = false;
  wake();
}

void WatchdogServer::watch_granted_turn(short revents) {
  std::lock_guard lock(mutex_);
  if (revents && turn_in_progress_ && granted_fd_ >= 0 && connection_broken(granted_fd_)) {
    log::info("watchdog: a client died before it connected in its turn");
    granted_client_died_ = true;
  }
}

// Hello comes after MPI_Comm_connect, which took over 10 s for clients starting together on a
// loaded 2-core machine (the soak test): it gets that much longer than a challenge.
std::chrono::milliseconds WatchdogServer::claim_window() const {
  using namespace std::chrono_literals;
  return peer_timeout_ * 2 + 30s;
}

// A client that connected but never answered, or never said Hello, within the timeout is dropped.
void WatchdogServer::drop_stale() {
  const auto older_than = [&](Clock::time_point since, Clock::duration limit) { return Clock::now() - since > limit; };
  const auto stale = [&](Clock::time_point since) { return older_than(since, peer_timeout_ * 2); };
  std::erase_if(challenged_, [&](Challenge& challenge) {
    if (!stale(challenge.since)) return false;
    log::info("watchdog: the client at ", challenge.peer, " did not answer the challenge");
    close_fd(challenge.fd);
    return true;
  });
  std::lock_guard lock(mutex_);
  for (auto it = unclaimed_.begin(); it != unclaimed_.end();) {
    if (!older_than(it->second.since, claim_window())) {
      ++it;
      continue;
    }
    forget_granted(it->second.fd);
    close_fd(it->second.fd);
    it = unclaimed_.erase(it);
  }
}

void WatchdogServer::run() {
  while (true) {
    drop_stale();
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    for (const auto& challenge : challenged_) fds.push_back({challenge.fd, POLLIN, 0});
    const size_t granted = fds.size();
    std::vector<uint32_t> keys;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (!admitting_ && listen_fd_ >= 0) {
        close_fd(listen_fd_);
        for (auto& challenge : challenged_) close_fd(challenge.fd);
        challenged_.clear();
        continue;
      }
      fds.push_back({turn_in_progress_ && !granted_client_died_ ? granted_fd_ : -1, POLLIN, 0});
      for (auto& [key, fd] : claimed_) {
        fds.push_back({fd, POLLIN, 0});
        keys.push_back(key);
      }
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(peer_timeout_.count())) < 0 && errno != EINTR) return;
    if (fds[1].revents & POLLIN) drain_pipe(wake_pipe_[0]);
    // Settled challenges leave the list; accept_one appends after this.
    std::vector<Challenge> waiting;
    for (size_t i = 0; i < challenged_.size(); ++i)
      if (!fds[2 + i].revents || read_request(challenged_[i])) waiting.push_back(std::move(challenged_[i]));
    challenged_ = std::move(waiting);
    if (fds[0].revents & POLLIN) accept_one();
    watch_granted_turn(fds[granted].revents);
    const size_t first_claimed = granted + 1;
    for (size_t i = first_claimed; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const uint32_t key = keys[i - first_claimed];
      {
        // Under the lock, and only while the key still holds it: a connection released meanwhile
        // was closed, and its fd number may already be a new client's.
        std::lock_guard lock(mutex_);
        const auto it = claimed_.find(key);
        if (it == claimed_.end() || it->second != fds[i].fd || !connection_broken(it->second)) continue;
        forget_granted(it->second);
        close_fd(it->second);
        claimed_.erase(it);
      }
      on_lost_(key);
    }
  }
}

// --- WatchdogConnection ----------------------------------------------------------------

namespace {

// The answer to the proxy's nonce, then the Hello's length and the Hello (if any). Made in a
// vector of its whole size: appending to the answer (vector::insert) made GCC 13 warn of an
// overflow that cannot happen (-Wstringop-overflow at -O3).
Bytes admission_request(const Bytes& answer, const Bytes& hello_frame) {
  Bytes length;
  append_little_endian<uint32_t>(length, static_cast<uint32_t>(hello_frame.size()));
  Bytes request(answer.size() + length.size() + hello_frame.size());
  auto next = std::copy(answer.begin(), answer.end(), request.begin());
  next = std::copy(length.begin(), length.end(), next);
  std::copy(hello_frame.begin(), hello_frame.end(), next);
  return request;
}

enum class Admission { unreachable, refused, dropped, unanswered, admitted, session_started };

// Connects and answers the proxy's challenge, with the Hello `hello` makes for its nonce (if
// any); `fd`, and `ahead` (clients before this one) when admitted to wait in line.
Admission answer_challenge(const std::string& host, uint16_t port, Clock::time_point deadline, const Bytes& secret,
                           const WatchdogConnection::HelloFor& hello, std::chrono::milliseconds peer_timeout, int& fd,
                           uint32_t& ahead) {
  fd = connect_with_timeout(host, port, deadline);
  if (fd < 0) return Admission::unreachable;
  set_peer_timeout(fd, peer_timeout);  // also while waiting in line: a vanished node is noticed
  Bytes nonce(auth_nonce_bytes);
  if (const Read read = read_exactly(fd, nonce.data(), nonce.size(), deadline); read != Read::done) {
    close_fd(fd);
    return read == Read::closed ? Admission::unreachable : Admission::unanswered;
  }
  const Bytes request = admission_request(auth_answer(secret, nonce), hello ? hello(nonce) : Bytes{});
  std::byte place[sizeof(uint32_t)];
  const Read read = write_all(fd, request.data(), request.size()) ? read_exactly(fd, place, sizeof place, deadline)
                                                                   : Read::closed;
  if (read != Read::done) {
    close_fd(fd);
    return read == Read::closed ? Admission::dropped : Admission::unanswered;
  }
  ahead = from_little_endian<uint32_t>(place);
  if (ahead == session_started_answer) return Admission::session_started;
  if (ahead != refused_answer) return Admission::admitted;
  close_fd(fd);
  return Admission::refused;
}

// Reads the token and the port of this client's turn.
bool receive_turn(int fd, Clock::time_point deadline, Bytes& token, std::string& mpi_port) {
  token.resize(watchdog_token_bytes);
  std::byte length[sizeof(uint16_t)];
  if (read_exactly(fd, token.data(), token.size(), deadline) != Read::done ||
      read_exactly(fd, length, sizeof length, deadline) != Read::done)
    return false;
  mpi_port.resize(from_little_endian<uint16_t>(length));
  return mpi_port.size() <= max_mpi_port_bytes &&
         read_exactly(fd, mpi_port.data(), mpi_port.size(), deadline) == Read::done;
}

}  // namespace

std::optional<WatchdogConnection> WatchdogConnection::open(const std::vector<std::string>& hosts, uint16_t port,
                                                           std::chrono::milliseconds timeout,
                                                           std::chrono::milliseconds peer_timeout,
                                                           const Bytes& secret, const HelloFor& hello) {
  constexpr int attempts = 3;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    bool unanswered = false;
    for (const auto& host : hosts) {
      int fd = -1;
      uint32_t ahead = 0;
      switch (answer_challenge(host, port, Clock::now() + timeout, secret, hello, peer_timeout, fd, ahead)) {
        case Admission::unreachable: continue;
        case Admission::unanswered:
          log::warn("the proxy's watchdog at ", host, ":", port, " did not answer within ", timeout.count(), " ms");
          unanswered = true;
          continue;
        case Admission::dropped:
          log::warn("the proxy's watchdog at ", host, ":", port, " closed the connection before admitting this client");
          unanswered = true;
          continue;
        case Admission::refused:
          log::error("the proxy at ", host, ":", port, " refused this client: wrong or missing shared secret (secret_file)");
          return std::nullopt;
        case Admission::session_started:
          log::debug("watchdog: ", host, ":", port, " started this client's session without MPI");
          return WatchdogConnection(fd, {}, {}, true);
        case Admission::admitted: break;
      }
      Bytes token;
      std::string mpi_port;
      const auto wait = timeout * (ahead + 1);
      if (receive_turn(fd, Clock::now() + wait, token, mpi_port)) {
        log::debug("watchdog: connected to ", host, ":", port, " after ", ahead, " client(s) ahead");
        return WatchdogConnection(fd, std::move(token), std::move(mpi_port), false);
      }
      close_fd(fd);
      log::error("the proxy at ", host, ":", port, " did not give this client its turn to connect within ",
                 wait.count(), " ms (", ahead, " client(s) ahead)");
      return std::nullopt;
    }
    if (!unanswered) return std::nullopt;  // nothing listens: the proxy is gone
    log::warn("the proxy's watchdog at port ", port, " did not admit this client (attempt ", attempt, " of ",
              attempts, ")");
  }
  return std::nullopt;
}

WatchdogConnection::WatchdogConnection(WatchdogConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      token_(std::move(other.token_)),
      mpi_port_(std::move(other.mpi_port_)),
      session_started_(other.session_started_) {}

WatchdogConnection& WatchdogConnection::operator=(WatchdogConnection&& other) noexcept {
  if (this != &other) {
    close_fd(fd_);
    fd_ = std::exchange(other.fd_, -1);
    token_ = std::move(other.token_);
    mpi_port_ = std::move(other.mpi_port_);
    session_started_ = other.session_started_;
  }
  return *this;
}

WatchdogConnection::~WatchdogConnection() { close_fd(fd_); }

bool WatchdogConnection::peer_closed() const { return connection_broken(fd_); }

// --- WatchdogMonitor -------------------------------------------------------------------

WatchdogMonitor::WatchdogMonitor() {
  if (!make_pipe(wake_pipe_)) log::error("watchdog: cannot create a pipe: ", std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

WatchdogMonitor::~WatchdogMonitor() {
  stop();
  close_fd(wake_pipe_[0]);
  close_fd(wake_pipe_[1]);
}

void WatchdogMonitor::watch(WatchdogConnection connection, OnLost on_lost) {
  {
    std::lock_guard lock(mutex_);
    watched_.push_back(Watched{std::move(connection), std::move(on_lost)});
  }
  poke(wake_pipe_[1]);
}

void WatchdogMonitor::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  poke(wake_pipe_[1]);
  if (thread_.joinable()) thread_.join();
  watched_.clear();
}

void WatchdogMonitor::run() {
  while (true) {
    std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}};
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      for (auto& w : watched_) fds.push_back({w.connection.fd(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) drain_pipe(wake_pipe_[0]);
    std::vector<OnLost> lost;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      std::erase_if(watched_, [&](Watched& w) {
        const auto it = std::find_if(fds.begin() + 1, fds.end(), [&](const pollfd& p) { return p.fd == w.connection.fd(); });
        if (it == fds.end() || !it->revents || !connection_broken(w.connection.fd())) return false;
        lost.push_back(std::move(w.on_lost));
        return true;
      });
    }
    for (auto& on_lost : lost) on_lost();
  }
}

}  // namespace hivecl::transport
