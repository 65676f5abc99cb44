// hivecl-proxy's server: the native devices it serves, the MPI port and its accept
// thread, the watchdog, the sessions, and an orderly shutdown on SIGTERM/SIGINT.
#pragma once

#include <CL/cl.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"
#include "protocol/messages.hpp"
#include "proxy/peers.hpp"
#include "transport/engine.hpp"
#include "transport/watchdog.hpp"

namespace hivecl::proxy {

class Session;

// The signals that shut the proxy down in order. hivecl-cluster asks otherwise: it removes
// the proxy's rendezvous record (see Server::run), because mpirun does not forward signals
// to a proxy in a detached job, and on SIGTERM kills its job after a few seconds.
inline constexpr int termination_signals[] = {SIGTERM, SIGINT, SIGHUP};

struct NativeDevice {
  cl_platform_id platform;
  cl_device_id device;
  std::string platform_name;
  std::string platform_version;
};

class Server {
 public:
  Server(Config config, std::vector<NativeDevice> devices);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Serves until a termination signal arrives (the caller has blocked those signals) or the
  // proxy's rendezvous record is removed; returns the exit code. Or, once a client that
  // died inside its MPI connection left the accept waiting for ever, admits no more
  // clients, asks for a replacement (proxy_replacement_file), serves its sessions to their
  // end and returns exit_to_restart: the caller leaves MPI as it is and exits.
  int run();
  static constexpr int exit_to_restart = 75;  // EX_TEMPFAIL

  const Config& config() const { return config_; }
  transport::Engine& engine() { return engine_; }
  transport::WatchdogServer& watchdog() { return watchdog_; }
  const std::vector<NativeDevice>& devices() const { return devices_; }
  PeerTickets& peer_tickets() { return peer_tickets_; }
  PeerLinks& peer_links() { return peer_links_; }

 private:
  void accept_loop();
  void admit(MPI_Comm comm);
  // The watchdog's OnHello: a session for a client of this node whose `hello` frame names a
  // control channel this proxy can map and memory it can reach, holding the challenge's `nonce`
  // as its probe; its number, or nullopt.
  std::optional<uint32_t> start_session_without_mpi(const protocol::Bytes& nonce, protocol::Bytes&& hello);
  void lose_session(uint32_t number);
  // The sessions, copied out of the map under its lock (`take`: the map left empty).
  std::vector<std::shared_ptr<Session>> sessions_now(bool take);
  void reap_sessions();
  bool wake_accept_thread();
  enum class Ending { shutdown, accept_wedged };
  // Also rewrites the status file every second meanwhile.
  Ending wait_for_shutdown(const std::string& record_path);
  int poll_for_signal(unsigned poll);
  void ask_for_replacement();
  // Until the sessions have ended or a termination signal arrives.
  void drain_sessions();
  bool has_live_sessions();
  void publish_status();
  protocol::ProxyRecord make_record() const;

  Config config_;
  std::vector<NativeDevice> devices_;
  transport::Engine engine_;
  transport::WatchdogServer watchdog_;
  MPI_Comm accept_comm_ = MPI_COMM_NULL;
  std::mutex port_mutex_;
  std::string port_;  // the port of the turn in progress, for the waker
  protocol::ProxyRecord record_;
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};
  // Held only to find, add or take out sessions, never while one is lost or destroyed: that
  // joins its control channel's reader, which may itself be waiting for this lock (a client that
  // dies breaks its channel and closes its watchdog connection at once, and both lose the session).
  std::mutex sessions_mutex_;
  std::map<uint32_t, std::shared_ptr<Session>> sessions_;
  uint32_t next_session_ = 1;
  PeerTickets peer_tickets_;
  PeerLinks peer_links_{config_, engine_};
};

// Native devices of every platform except HiveCL itself, filtered by the proxy_platform
// and proxy_device_type settings.
std::vector<NativeDevice> find_native_devices(const Config& config);
// The record of one device: every parameter of device_info.hpp with its value or error.
protocol::DeviceRecord describe_device(const NativeDevice& device, protocol::ObjectId id);

}  // namespace hivecl::proxy
