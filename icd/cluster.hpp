// The HiveCL cluster as one client process sees it: the proxies of the rendezvous
// directory, their devices (one platform), the MPI runtime and progress engine, and
// the watchdog monitor. Created at the first OpenCL call that reaches libhivecl and
// kept until the process exits.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "config.hpp"
#include "icd/connection.hpp"
#include "icd/objects.hpp"
#include "transport/engine.hpp"
#include "transport/watchdog.hpp"

namespace hivecl::icd {

class Cluster {
 public:
  static Cluster& get();

  // False inside hivecl-proxy and when neither the rendezvous directory lists a proxy nor
  // this node has devices to serve in-process: then HiveCL reports no platform.
  bool serving() const { return !devices_.empty(); }
  cl_platform_id platform() { return &platform_; }
  const std::vector<cl_device_id>& devices() const { return device_handles_; }
  const Config& config() const { return config_; }
  // Requests this process sent over every connection (CL_PLATFORM_MESSAGES_SENT_HIVECL).
  uint64_t requests_sent() const;
  transport::Engine& engine() { return engine_; }
  transport::WatchdogMonitor& monitor() { return *monitor_; }  // exists once start_watching() ran

  // Starts the watchdog monitor and the orderly ending at exit: before the first connection.
  void start_watching();
  // MPI starts in the background (at the first device query with eager_mpi_init, where a proxy
  // needs it) or on demand; never in a process that uses no proxy of another node (in-process
  // devices, proxies of this node connected without MPI) unless a proxy turns it down.
  void start_mpi();
  // Starts MPI if needed and blocks until it is up; false if it could not be initialised.
  bool wait_mpi();
  // MPI_Comm_connect to the port of `watchdog`'s turn (MPI_COMM_NULL when it fails), given up
  // when the proxy closes that watchdog connection or after `limit`: a connect cannot be interrupted, and waits
  // for ever when the proxy dies during it (docs/FINDINGS.md). A connect given up is left
  // in a thread of its own (MPI_Finalize still returns).
  MPI_Comm connect(const transport::WatchdogConnection& watchdog, std::chrono::milliseconds limit);
  // Ends every connection and MPI (if HiveCL started it); at exit or at the application's MPI_Finalize.
  void shutdown();

 private:
  Cluster();
  // Whether this node's devices are served in-process (the local_devices setting).
  bool wants_in_process(const std::vector<protocol::ProxyRecord>& records) const;
  // Loads libhivecl-local.so and adds the devices it serves, first in the platform.
  void open_in_process();
  void add_connection(std::unique_ptr<Connection> connection, const std::vector<protocol::DeviceRecord>& devices);
  // Starts MPI in the engine's thread, once.
  void launch_mpi();
  bool init_mpi();
  void finalize_mpi();
  void watch_application_finalize();

  Config config_;
  _cl_platform_id platform_;
  std::unique_ptr<transport::InProcessBackend> in_process_;
  std::vector<std::unique_ptr<Connection>> connections_;
  size_t proxy_connections_ = 0;
  size_t proxies_needing_mpi_ = 0;  // of those, the ones not offered a session without MPI
  std::vector<std::unique_ptr<_cl_device_id>> devices_;
  std::vector<cl_device_id> device_handles_;
  transport::Engine engine_;
  std::unique_ptr<transport::WatchdogMonitor> monitor_;
  std::once_flag watching_start_;
  std::once_flag mpi_start_;
  std::once_flag shutdown_once_;
  bool mpi_ours_ = false;
  MPI_Comm connect_comm_ = MPI_COMM_NULL;  // MPI_COMM_SELF with errors returned
};

// Builds a device from its proxy's record, as HiveCL presents it (see device.cpp).
std::unique_ptr<_cl_device_id> make_device(Connection* connection, const protocol::DeviceRecord& record,
                                           const std::string& node);

}  // namespace hivecl::icd
