#include "proxy/server.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstring>
#include <string_view>
#include <filesystem>
#include <fstream>

#include "log.hpp"
#include "node.hpp"
#include "proxy/data_path.hpp"
#include "proxy/session.hpp"
#include "transport/rendezvous.hpp"
#include "transport/secret.hpp"

extern char** environ;

namespace hivecl::proxy {

using namespace std::chrono_literals;

Server::Server(Config config, std::vector<NativeDevice> devices)
    : config_(std::move(config)), devices_(std::move(devices)) {}

Server::~Server() = default;

protocol::ProxyRecord Server::make_record() const {
  protocol::ProxyRecord record;
  record.node = node_name();
  record.pid = static_cast<int32_t>(::getpid());
  record.watchdog_hosts = transport::local_addresses();
  record.watchdog_port = watchdog_.port();
  for (size_t i = 0; i < devices_.size(); ++i) record.devices.push_back(describe_device(devices_[i], i + 1));
  return record;
}

int Server::run() {
  engine_.start({.spin = config_.session_poll_spin(), .max_sleep = config_.poll_sleep, .max_message_bytes = config_.max_message_bytes});
  std::optional<protocol::Bytes> secret;
  if (!config_.secret_file.empty()) {
    std::string why;
    secret = transport::load_secret(config_.secret_file, why);
    if (!secret) {
      log::error(why, ": not serving");
      return 1;
    }
    log::info("clients must prove the shared secret of ", config_.secret_file);
  }
  if (!watchdog_.start(
          config_.peer_timeout, [this](uint32_t number) { lose_session(number); }, std::move(secret),
          [this](const protocol::Bytes& nonce, protocol::Bytes&& hello) {
            return start_session_without_mpi(nonce, std::move(hello));
          }))
    return 1;
  // Accept errors (a client that failed mid-connect) are returned, not fatal to the proxy.
  MPI_Comm_dup(MPI_COMM_SELF, &accept_comm_);
  MPI_Comm_set_errhandler(accept_comm_, MPI_ERRORS_RETURN);
  record_ = make_record();
  const std::string record_path = transport::publish_proxy(config_.cluster_dir, record_);
  if (record_path.empty()) {
    log::error("cannot write the rendezvous record in ", config_.cluster_dir);
    return 1;
  }
  log::info("serving ", devices_.size(), " device(s); watchdog port ", watchdog_.port(), "; record ", record_path);
  accept_thread_ = std::thread([this] { accept_loop(); });

  const Ending ending = wait_for_shutdown(record_path);
  if (ending == Ending::accept_wedged) {
    if (!transport::mark_draining(config_.cluster_dir, record_)) std::filesystem::remove(record_path);
    watchdog_.stop_admitting();
    ask_for_replacement();
    drain_sessions();
    transport::withdraw_draining(config_.cluster_dir, record_);
  } else {
    std::filesystem::remove(record_path);
  }
  transport::withdraw_status(config_.cluster_dir, record_);
  stopping_ = true;
  for (const auto& session : sessions_now(false)) session->lose();
  const bool accept_stopped =
      ending == Ending::shutdown && (!watchdog_.close_turnstile() || wake_accept_thread());
  log::debug("accept thread ", accept_stopped ? "stopped" : "stuck");
  if (accept_stopped) {
    accept_thread_.join();
  } else {
    accept_thread_.detach();
  }
  sessions_now(true).clear();  // joins the workers, which release every object
  log::debug("sessions ended");
  peer_links_.close();
  engine_.stop();
  watchdog_.stop();
  if (accept_stopped) MPI_Comm_free(&accept_comm_);
  log::debug("server stopped");
  if (ending == Ending::accept_wedged) return exit_to_restart;
  return accept_stopped ? 0 : 2;
}

namespace {

// The termination signal that arrived within 200 ms, or 0.
int termination_signal_in_a_while() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : termination_signals) sigaddset(&signals, s);
  const timespec poll_interval{0, 200'000'000};
  const int received = sigtimedwait(&signals, nullptr, &poll_interval);
  return std::max(received, 0);
}

}  // namespace

// Rewrites the status file about once a second (every fifth poll), then waits up to 200 ms
// for a termination signal; returns it, or 0.
int Server::poll_for_signal(unsigned poll) {
  if (poll % 5 == 0) publish_status();
  return termination_signal_in_a_while();
}

Server::Ending Server::wait_for_shutdown(const std::string& record_path) {
  for (unsigned poll = 0;; ++poll) {
    if (const int received = poll_for_signal(poll)) {
      log::info("signal ", received, ": shutting down");
      return Ending::shutdown;
    }
    if (!std::filesystem::exists(record_path)) {
      log::info("rendezvous record removed: shutting down");
      return Ending::shutdown;
    }
    // Open MPI's accept can wait for ever on a client that died inside its connect (in
    // PMIx_Get or the lookups of ompi_comm_nextcid), and every communicator made after it
    // waits behind it (docs/FINDINGS.md): only a new process accepts again.
    if (watchdog_.turn_abandoned() && !wake_accept_thread()) {
      log::error("a client died inside its MPI connection and left the accept waiting for ever: admitting no "
                 "more clients, and exiting once the sessions have ended");
      return Ending::accept_wedged;
    }
  }
}

// The supervisor starts a new proxy as soon as this file appears, so that clients need not
// wait for this one's sessions to end.
void Server::ask_for_replacement() {
  const std::string& path = config_.proxy_replacement_file;
  if (path.empty()) return;
  // Whole or not at all: the supervisor reads this proxy's pid from it (to end it gracefully).
  const std::string written = path + ".new";
  std::error_code error;
  if (std::ofstream(written) << ::getpid() << '\n') std::filesystem::rename(written, path, error);
  if (std::filesystem::exists(path, error)) {
    log::info("asked for a new proxy beside this one (", path, ")");
  } else {
    log::error("cannot create ", path, ": a new proxy starts only once this one has exited");
  }
}

bool Server::has_live_sessions() {
  std::lock_guard lock(sessions_mutex_);
  return std::any_of(sessions_.begin(), sessions_.end(), [](const auto& entry) { return !entry.second->finished(); });
}

void Server::drain_sessions() {
  for (unsigned poll = 0; has_live_sessions(); ++poll) {
    if (const int received = poll_for_signal(poll)) {
      log::info("signal ", received, ": ending the sessions");
      return;
    }
  }
}

// MPI_Comm_accept cannot be interrupted, and connecting to one's own port deadlocks in
// Open MPI: a short-lived child process (hivecl-proxy --wake) connects instead.
namespace {

// What mpirun adds to its processes' environment to make them members of its job (Open MPI
// 4.1); the waker must not inherit those, but keeps the user's own MCA settings.
bool names_the_job(std::string_view variable) {
  static constexpr std::string_view job_prefixes[] = {
      "PMIX_", "OMPI_COMM_WORLD_", "OMPI_APP_CTX_", "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS", "OMPI_UNIVERSE_SIZE",
      "OMPI_COMMAND", "OMPI_ARGV", "OMPI_FILE_LOCATION", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix",
      "OMPI_MCA_initial_wdir", "OMPI_MCA_mpi_oversubscribe", "OMPI_MCA_shmem_RUNTIME_QUERY_hint"};
  return std::any_of(std::begin(job_prefixes), std::end(job_prefixes),
                     [&](std::string_view prefix) { return variable.starts_with(prefix); });
}

}  // namespace

bool Server::wake_accept_thread() {
  std::string port;
  {
    std::lock_guard lock(port_mutex_);
    port = port_;
  }
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry)
    if (!names_the_job(*entry)) environment.push_back(*entry);
  environment.push_back("OMPI_MCA_pmix_server_uri=file:" + transport::ompi_server_uri_path(config_.cluster_dir));
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string flag = "--wake";
  std::vector<char*> argv{self.data(), flag.data(), port.data(), nullptr};
  const pid_t child = ::fork();
  if (child == 0) {
    ::execve(self.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  if (child < 0) return false;
  for (auto waited = 0ms; waited < config_.connect_timeout; waited += 10ms) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  log::warn("the accept thread could not be woken");
  return false;
}

// One client at a time, each on a port of its own (watchdog.hpp says why).
void Server::accept_loop() {
  while (true) {
    const int client = watchdog_.wait_for_turn();
    if (client < 0) return;
    char port[MPI_MAX_PORT_NAME] = {};
    if (MPI_Open_port(MPI_INFO_NULL, port) != MPI_SUCCESS) {
      log::error("MPI_Open_port failed");
      ::close(client);
      continue;
    }
    {
      std::lock_guard lock(port_mutex_);
      port_ = port;
    }
    if (!watchdog_.grant_turn(client, port)) {
      MPI_Close_port(port);
      continue;
    }
    MPI_Comm comm = MPI_COMM_NULL;
    const int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, accept_comm_, &comm);
    const bool abandoned = watchdog_.end_turn();
    MPI_Close_port(port);
    if (rc == MPI_SUCCESS && (stopping_ || abandoned)) MPI_Comm_free(&comm);
    if (stopping_) return;
    if (rc != MPI_SUCCESS) log::warn("MPI_Comm_accept failed (", rc, ")");
    if (rc == MPI_SUCCESS && !abandoned) admit(comm);
  }
}

void Server::admit(MPI_Comm comm) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  reap_sessions();
  std::lock_guard lock(sessions_mutex_);
  const uint32_t number = next_session_++;
  auto session = std::make_shared<Session>(number, std::make_shared<ClientProcessLink>(engine_, std::make_shared<transport::Link>(comm)), *this);
  session->start();
  sessions_.emplace(number, std::move(session));
  log::debug("accepted session ", number);
}

namespace {

// The Hello request of `frame`, if that is what it holds.
std::optional<protocol::Hello::Request> hello_of(const protocol::Bytes& frame) {
  protocol::Reader reader(frame);
  protocol::FrameHeader header;
  protocol::Hello::Request hello;
  if (!protocol::decode(reader, header) || header.magic != protocol::frame_magic ||
      header.kind != protocol::FrameKind::request || header.opcode != protocol::Opcode::Hello ||
      !protocol::decode(reader, hello) || !reader.at_end())
    return std::nullopt;
  return hello;
}

}  // namespace

// Runs in the watchdog's thread; nullopt puts the client in line to connect over MPI instead.
std::optional<uint32_t> Server::start_session_without_mpi(const protocol::Bytes& nonce, protocol::Bytes&& frame) {
  const auto hello = hello_of(frame);
  if (!hello) log::warn("a client's admission came with bytes that are no Hello: over MPI");
  if (!hello || hello->version != protocol::protocol_version || stopping_) return std::nullopt;
  auto channel = transport::ControlChannel::attach(hello->pid, hello->control_fd, hello->control_inode,
                                                   hello->control_bytes);
  if (!channel) {
    log::info("cannot map the control channel of client ", hello->host, " pid ", hello->pid, ": over MPI");
    return std::nullopt;
  }
  reap_sessions();
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(sessions_mutex_);
    const uint32_t number = next_session_;
    auto link = std::make_shared<ClientProcessLink>(engine_, std::move(channel), config_, [this, number] {
      log::warn("session ", number, ": the client broke the shared control channel; closing");
      lose_session(number);
    });
    auto data_path = choose_data_path(*hello, nonce, number, link, config_.copy_threads);
    if (!transport::moves_by_memory(data_path->kind())) return std::nullopt;  // logged: over MPI
    ++next_session_;
    session = std::make_shared<Session>(number, std::move(link), *this);
    session->set_data_path(std::move(data_path));
    session->deliver(std::move(frame));
    sessions_.emplace(number, session);
  }
  // Outside the lock, which its channel's reader takes to lose it. Lost before it starts (the
  // proxy stopping), it starts no reader (ClientProcessLink::listen) and its worker ends at once.
  session->start();
  log::debug("started session ", session->number(), " without MPI");
  return session->number();
}

void Server::lose_session(uint32_t number) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(sessions_mutex_);
    if (const auto it = sessions_.find(number); it != sessions_.end()) session = it->second;
  }
  if (!session) return;
  log::info("session ", number, ": client connection lost");
  session->lose();
}

std::vector<std::shared_ptr<Session>> Server::sessions_now(bool take) {
  std::vector<std::shared_ptr<Session>> sessions;
  std::lock_guard lock(sessions_mutex_);
  for (auto& [number, session] : sessions_) sessions.push_back(session);
  if (take) sessions_.clear();
  return sessions;
}

void Server::publish_status() {
  protocol::ProxyStatus status{.updated_at = std::time(nullptr)};
  {
    std::lock_guard lock(sessions_mutex_);
    for (const auto& [number, session] : sessions_)
      if (!session->finished()) status.sessions.push_back(session->status());
  }
  if (!transport::publish_status(config_.cluster_dir, record_, status))
    log::warn("cannot write the status file in ", config_.cluster_dir);
}

void Server::reap_sessions() {
  std::vector<std::shared_ptr<Session>> finished;  // destroyed once the lock is free
  std::lock_guard lock(sessions_mutex_);
  std::erase_if(sessions_, [&](const auto& entry) {
    if (!entry.second->finished()) return false;
    finished.push_back(entry.second);
    return true;
  });
}

}  // namespace hivecl::proxy
