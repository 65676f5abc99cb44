#include "icd/cluster.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "log.hpp"
#include "transport/mpi_defaults.hpp"
#include "transport/rendezvous.hpp"

namespace hivecl::icd {

Cluster& Cluster::get() {
  // Never destroyed: the orderly part of the ending happens in shutdown(), at exit.
  static Cluster* const cluster = new Cluster();
  return *cluster;
}

Cluster::Cluster() : config_(hivecl::config()) {
  log::set_role("hivecl");
  if (std::getenv("HIVECL_IN_PROXY")) return;
  for (auto& record : transport::discover_proxies(config_.cluster_dir)) {
    if (!config_.uses_node(record.node)) continue;
    auto connection = std::make_unique<Connection>(*this, engine_, record);
    for (const auto& device : record.devices)
      devices_.push_back(make_device(connection.get(), device, record.node));
    connections_.push_back(std::move(connection));
  }
  if (devices_.empty()) {
    log::debug("no proxy in ", config_.cluster_dir, ": HiveCL offers no platform");
    return;
  }
  register_handle(&platform_, HandleKind::platform);
  for (auto& device : devices_) {
    register_handle(device.get(), HandleKind::device);
    device_handles_.push_back(device.get());
  }
  log::debug("cluster ", config_.cluster_dir, ": ", connections_.size(), " proxies, ", devices_.size(), " devices");
}

void Cluster::start_mpi() {
  std::call_once(mpi_start_, [this] {
    monitor_ = std::make_unique<transport::WatchdogMonitor>();
    std::atexit([] { Cluster::get().shutdown(); });
    engine_.start({.spin = config_.poll_spin, .max_sleep = config_.poll_sleep, .max_message_bytes = config_.max_message_bytes},
                  [this] { return init_mpi(); }, [this] { finalize_mpi(); });
  });
}

bool Cluster::wait_mpi() {
  start_mpi();
  return engine_.wait_started();
}

namespace {

// Open MPI loads its components as plugins that need libmpi's symbols to be global, but
// the OpenCL loader opened libhivecl (and so libmpi) with RTLD_LOCAL.
void promote_mpi_symbols() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) && info.dli_fname)
    ::dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

int on_application_finalize(MPI_Comm, int, void*, void*) {
  Cluster::get().shutdown();
  return MPI_SUCCESS;
}

}  // namespace

// Runs in the engine thread, which is MPI's main thread when HiveCL initialises it.
bool Cluster::init_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    int level = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) {
      log::error("the application initialised MPI without MPI_THREAD_MULTIPLE, which HiveCL needs");
      return false;
    }
    watch_application_finalize();
  } else {
    if (!transport::ompi_server_reachable(config_.cluster_dir)) {
      log::error("the cluster's ompi-server (", transport::ompi_server_uri_path(config_.cluster_dir),
                 ") does not answer; is the cluster running?");
      return false;
    }
    // A plain process finds ompi-server through this variable (ENVIRONMENT.md).
    const transport::ScopedEnvironment server_uri("OMPI_MCA_pmix_server_uri",
                                       "file:" + transport::ompi_server_uri_path(config_.cluster_dir));
    // MPI_Init runs hwloc here and in the daemon it forks; hwloc's OpenCL plugin would load
    // HiveCL again inside them (in orted, it then started MPI there and crashed it).
    const transport::ScopedEnvironment no_opencl_in_hwloc("HWLOC_COMPONENTS", "-opencl");
    std::vector<std::unique_ptr<transport::ScopedEnvironment>> mpi_defaults;
    for (const auto& [variable, value] : transport::mpi_defaults)
      mpi_defaults.push_back(std::make_unique<transport::ScopedEnvironment>(variable, value));
    promote_mpi_symbols();
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return false;
    mpi_ours_ = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      log::error("the MPI library does not provide MPI_THREAD_MULTIPLE");
      return false;
    }
  }
  MPI_Comm_dup(MPI_COMM_SELF, &connect_comm_);
  MPI_Comm_set_errhandler(connect_comm_, MPI_ERRORS_RETURN);
  return true;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: HiveCL ends its connections then,
// while MPI still works.
void Cluster::watch_application_finalize() {
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_application_finalize, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
}

void Cluster::finalize_mpi() {
  if (connect_comm_ != MPI_COMM_NULL) MPI_Comm_free(&connect_comm_);
  if (mpi_ours_) MPI_Finalize();
}

void Cluster::shutdown() {
  std::call_once(shutdown_once_, [this] {
    for (auto& connection : connections_) connection->shutdown();
    if (monitor_) monitor_->stop();
    engine_.stop();
  });
}

}  // namespace hivecl::icd
