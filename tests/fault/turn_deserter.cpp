// A client that dies while it has its turn to connect (transport/watchdog.hpp): it waits in
// the first proxy's line like libhivecl, and once granted the turn either exits at once
// ("at-grant") or calls MPI_Comm_connect and exits MILLISECONDS later, wherever the connect
// then is ("in-connect MILLISECONDS"; it exits when the connect returns first). The proxy
// must serve the next client as before. Exit status 0 when it got its turn, 1 when not,
// 2 on bad arguments.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "config.hpp"
#include "transport/mpi_defaults.hpp"
#include "transport/rendezvous.hpp"
#include "transport/secret.hpp"
#include "transport/watchdog.hpp"

namespace {

using namespace hivecl;

std::optional<transport::WatchdogConnection> wait_for_turn(const Config& config) {
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
                                             config.connect_timeout, config.peer_timeout, secret);
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
  if (!(mode == "at-grant" && argc == 2) && !(mode == "in-connect" && argc == 3)) return 2;
  const Config config = Config::load();
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
