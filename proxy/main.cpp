// hivecl-proxy: serves this node's OpenCL devices to HiveCL clients. Started by mpirun
// (one job per proxy, see hivecl-cluster); connected to by clients through ompi-server.
#include <mpi.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "config.hpp"
#include "hivecl_build_config.hpp"
#include "log.hpp"
#include "proxy/output_capture.hpp"
#include "proxy/server.hpp"
#include "proxy/topology.hpp"
#include "proxy/status.hpp"
#include "transport/mpi_defaults.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage: hivecl-proxy [--cluster-dir DIR] [--platform NAME] [--device-type all|gpu|cpu|accelerator]\n"
         "                    [--devices I,J,...] [--log LEVEL] [--set KEY=VALUE]... [--status [--json] | --show-config | --help]\n"
         "Serves this node's OpenCL devices to HiveCL clients; started by mpirun (see hivecl-cluster).\n"
         "Settings default to the HiveCL configuration (" HIVECL_SYSCONFDIR "/hivecl/hivecl.conf,\n"
         "~/.config/hivecl/hivecl.conf, $HIVECL_CONFIG, then HIVECL_<KEY> variables).\n"
         "  --cluster-dir DIR  rendezvous directory of the cluster (cluster_dir)\n"
         "  --platform NAME    serve only platforms whose name contains NAME (proxy_platform)\n"
         "  --device-type T    serve only devices of this type (proxy_device_type)\n"
         "  --devices I,J,...  serve only these devices of the node (proxy_devices)\n"
         "  --log LEVEL        error, warn, info, debug or trace (proxy_log)\n"
         "  --set KEY=VALUE    any other setting\n"
         "  --status           list the cluster's proxies, devices and live sessions, then exit\n"
         "  --json             with --status: as JSON\n"
         "  --show-config      print the settings in effect, then exit\n"
         "  --help             print this help, then exit\n";
}

enum class Mode { serve, status, show_config, help };

// The child the server starts to wake its own accept thread (see Server::wake_accept_thread).
int wake(const char* port) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm comm = MPI_COMM_NULL;
  const int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &comm);
  if (rc == MPI_SUCCESS) MPI_Comm_free(&comm);
  MPI_Finalize();
  return rc == MPI_SUCCESS ? 0 : 1;
}

bool parse_arguments(int argc, char** argv, hivecl::Config& config, Mode& mode, bool& json) {
  static const std::pair<const char*, const char*> options[] = {
      {"--cluster-dir", "cluster_dir"}, {"--platform", "proxy_platform"},
      {"--device-type", "proxy_device_type"}, {"--devices", "proxy_devices"}, {"--log", "proxy_log"}};
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    bool matched = false;
    for (const auto& [flag, key] : options) {
      if (argument == flag && i + 1 < argc) {
        if (!config.set(key, argv[++i])) return false;
        matched = true;
      }
    }
    static const std::pair<const char*, Mode> modes[] = {
        {"--status", Mode::status}, {"--show-config", Mode::show_config}, {"--help", Mode::help}, {"-h", Mode::help}};
    for (const auto& [flag, flag_mode] : modes) {
      if (argument == flag) {
        mode = flag_mode;
        matched = true;
      }
    }
    if (argument == "--json") json = matched = true;
    if (argument == "--set" && i + 1 < argc) {
      const std::string setting = argv[++i];
      const auto eq = setting.find('=');
      if (eq == std::string::npos || !config.set(setting.substr(0, eq), setting.substr(eq + 1))) return false;
      matched = true;
    }
    if (!matched) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--wake") == 0) return wake(argv[2]);
  // Blocked before any thread exists, so that only the server's sigwait() receives them.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : hivecl::proxy::termination_signals) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // libhivecl, if the loader finds it here, must not serve inside the proxy.
  setenv("HIVECL_IN_PROXY", "1", 1);

  hivecl::log::set_role("hivecl-proxy");
  hivecl::Config config = hivecl::config();
  Mode mode = Mode::serve;
  bool json = false;
  if (!parse_arguments(argc, argv, config, mode, json)) {
    usage(std::cerr);
    return 2;
  }
  switch (mode) {
    case Mode::help: usage(std::cout); return 0;
    case Mode::show_config: std::cout << config.describe(); return 0;
    case Mode::status: return hivecl::proxy::print_status(config, json, std::cout);
    case Mode::serve: break;
  }
  hivecl::log::Level level;
  if (hivecl::log::parse_level(config.proxy_log_level, level)) hivecl::log::set_level(level);

  // Set for good (unless the user did): the waker child needs the same.
  for (const auto& [variable, value] : hivecl::transport::mpi_defaults) setenv(variable, value, 0);
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
  if (provided < MPI_THREAD_MULTIPLE) {
    hivecl::log::error("the MPI library does not provide MPI_THREAD_MULTIPLE");
    MPI_Finalize();
    return 1;
  }
  int status = 1;
  {
    auto devices = hivecl::proxy::find_native_devices(config);
    if (devices.empty()) {
      hivecl::log::error("no OpenCL device to serve (platform filter '", config.proxy_platform, "', type ",
                         config.proxy_device_type, ", devices '", config.proxy_devices, "')");
    } else {
      hivecl::proxy::place_near(devices);
      hivecl::proxy::OutputCapture::get().capture();  // kernels' printf goes to their clients
      hivecl::proxy::Server server(config, std::move(devices));
      status = server.run();
    }
  }
  if (status == hivecl::proxy::Server::exit_to_restart) {
    // A thread is still inside MPI_Comm_accept, for ever: MPI cannot be finalised.
    std::fflush(nullptr);
    std::_Exit(status);
  }
  MPI_Finalize();
  hivecl::log::debug("MPI finalised");
  return status;
}
