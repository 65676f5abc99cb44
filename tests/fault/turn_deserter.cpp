// A client that dies while it has its turn to connect (transport/watchdog.hpp): it waits in
// the first proxy's line like libhivecl, and once granted the turn either exits at once
// ("at-grant") or calls MPI_Comm_connect and exits MILLISECONDS later, wherever the connect
// then is ("in-connect MILLISECONDS"; it exits when the connect returns first). The proxy
// must serve the next client as before. Exit status 0 when it got its turn, 1 when not,
// 2 on bad arguments. "bad-hello" sends, with its admission, Hellos the proxy must not start a
// session without MPI for (send_bad_hellos says which) and deserts each turn the proxy gives it
// instead: 0 when each got a turn.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"
#include "node.hpp"
#include "protocol/messages.hpp"
#include "transport/control_channel.hpp"
#include "transport/mpi_defaults.hpp"
#include "transport/peer_memory.hpp"
#include "transport/rendezvous.hpp"
#include "transport/secret.hpp"
#include "transport/watchdog.hpp"

namespace {

using namespace hivecl;

std::optional<transport::WatchdogConnection> wait_for_turn(const Config& config,
                                                           const transport::WatchdogConnection::HelloFor& hello = {}) {
  const auto proxies = transport::discover_proxies(config.cluster_dir);
  if (proxies.empty()) return std::nullopt;
  protocol::Bytes secret;
  if (!config.secret_file.empty()) {
    std::string why;
    auto loaded = transport::load_secret(config.secret_file, why);
    if (!loaded) return std::nullopt;
    secret = std::move(*loaded);
  }
  return transport::WatchdogConnection::open(proxies.front().watchdog_hosts, proxies.front().watchdog_port,
                                             config.connect_timeout, config.peer_timeout, secret, hello);
}

// A Hello frame of this process naming the control channel `control_fd` (of `inode` and
// `bytes`) and the probe `probe`.
protocol::Bytes hello_frame(int32_t control_fd, uint64_t inode, uint64_t bytes, const protocol::Bytes& probe) {
  protocol::Bytes frame;
  protocol::Writer writer(frame);
  protocol::encode(writer, protocol::FrameHeader{.opcode = protocol::Opcode::Hello, .kind = protocol::FrameKind::request,
                                                 .sequence = 1});
  protocol::encode(writer, protocol::Hello::Request{.host = node_name(), .pid = static_cast<int32_t>(::getpid()),
                                                    .boot_id = transport::boot_id(),
                                                    .probe_address = reinterpret_cast<uint64_t>(probe.data()),
                                                    .probe = probe, .control_fd = control_fd, .control_inode = inode,
                                                    .control_bytes = bytes});
  return frame;
}

// Each Hello must get an MPI turn, not a session: bytes that are no frame; one naming a control
// channel that is not there; one naming a channel of this process with a probe that reads back
// but is not the challenge's nonce (what a client naming another process's memory would send).
int send_bad_hellos(const Config& config) {
  const auto channel = transport::ControlChannel::create();
  static const protocol::Bytes unproven(16, std::byte{0x5a});
  const std::vector<transport::WatchdogConnection::HelloFor> hellos{
      [](const protocol::Bytes&) { return protocol::Bytes{std::byte{0x55}, std::byte{0xaa}, std::byte{0x01}}; },
      [](const protocol::Bytes& nonce) { return hello_frame(999, 1, 1u << 20, nonce); },
      [&](const protocol::Bytes&) {
        return hello_frame(channel->segment().fd(), channel->segment().inode(), channel->segment().size(), unproven);
      }};
  if (!channel) return 1;
  for (const auto& hello : hellos) {
    const auto turn = wait_for_turn(config, hello);
    if (!turn || turn->session_started() || turn->mpi_port().empty()) {
      std::puts(turn ? "a session instead of a turn" : "no turn");
      return 1;
    }
  }
  std::puts("each got a turn");
  return 0;
}

// Starts MPI as libhivecl does when the application has not (icd/cluster.cpp).
void init_mpi(const Config& config) {
  for (const auto& [variable, value] : transport::standalone_mpi_settings(transport::ompi_server_uri_path(config.cluster_dir)))
    ::setenv(variable.c_str(), value.c_str(), 0);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "at-grant" || mode == "bad-hello") && argc == 2) && !(mode == "in-connect" && argc == 3)) return 2;
  const Config config = Config::load();
  if (mode == "bad-hello") return send_bad_hellos(config);
  if (mode == "in-connect") init_mpi(config);
  auto turn = wait_for_turn(config);
  if (!turn) {
    std::puts("no turn");
    return 1;
  }
  std::puts("got the turn");
  std::fflush(stdout);
  if (mode == "at-grant") ::_exit(0);
  const auto delay = std::chrono::milliseconds(std::strtol(argv[2], nullptr, 10));
  std::thread([delay] {
    std::this_thread::sleep_for(delay);
    ::_exit(0);
  }).detach();
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_connect(turn->mpi_port().c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &comm);
  ::_exit(0);
}
