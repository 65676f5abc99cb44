#include "icd/cluster.hpp"

#include <dlfcn.h>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "log.hpp"
#include "node.hpp"
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
  const auto records = transport::discover_proxies(config_.cluster_dir);
  if (wants_in_process(records)) open_in_process();
  // This node's devices are shown once: in-process, or through its proxy, or (hidden) not at all.
  const bool skip_this_node = in_process_ || config_.local_devices == "hidden";
  for (const auto& record : records) {
    if (!config_.uses_node(record.node) || (skip_this_node && record.node == node_name())) continue;
    auto connection = std::make_unique<Connection>(*this, engine_, record);
    if (!connection->may_connect_without_mpi()) ++proxies_needing_mpi_;
    add_connection(std::move(connection), record.devices);
    ++proxy_connections_;
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
  log::debug("cluster ", config_.cluster_dir, ": ", proxy_connections_, " proxies, ", devices_.size(), " devices",
             in_process_ ? " (with this node's in-process)" : "");
}

uint64_t Cluster::requests_sent() const {
  uint64_t sent = 0;
  for (const auto& connection : connections_) sent += connection->requests_sent();
  return sent;
}

void Cluster::add_connection(std::unique_ptr<Connection> connection,
                             const std::vector<protocol::DeviceRecord>& devices) {
  for (const auto& device : devices) devices_.push_back(make_device(connection.get(), device, connection->record().node));
  connections_.push_back(std::move(connection));
}

bool Cluster::wants_in_process(const std::vector<protocol::ProxyRecord>& records) const {
  if (!config_.uses_node(node_name())) return false;
  if (config_.local_devices == "in-process") return true;
  const bool proxy_here = std::any_of(records.begin(), records.end(),
                                      [](const auto& record) { return record.node == node_name(); });
  return config_.local_devices == "auto" && !proxy_here;
}

void Cluster::open_in_process() {
  // The executors' cl* calls must reach the native runtime through the OpenCL loader; in a
  // program linked to libhivecl itself they would reach libhivecl again.
  // (dlsym on the program's handle searches the global scope, as libhivecl-local's relocations do.)
  void* program = ::dlopen(nullptr, RTLD_NOW);
  if (program && ::dlsym(program, "clGetDeviceIDs") == reinterpret_cast<void*>(&clGetDeviceIDs)) {
    log::info("in-process devices: off in a program linked to libhivecl without an OpenCL loader");
    return;
  }
  Dl_info self{};
  if (!::dladdr(reinterpret_cast<void*>(&clIcdGetPlatformIDsKHR), &self) || !self.dli_fname) return;
  const auto path = std::filesystem::path(self.dli_fname).parent_path() / "libhivecl-local.so";
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const auto entry = library ? reinterpret_cast<transport::InProcessEntry>(
                                   ::dlsym(library, transport::in_process_entry_name))
                             : nullptr;
  if (!entry) {
    log::warn("in-process devices: cannot load ", path.string(), library ? "" : ": ", library ? "" : ::dlerror());
    return;
  }
  in_process_.reset(entry(config_, reinterpret_cast<const void*>(&clIcdGetPlatformIDsKHR)));
  if (!in_process_) return;
  protocol::ProxyRecord record;
  record.node = node_name();
  record.pid = static_cast<int32_t>(::getpid());
  add_connection(std::make_unique<Connection>(*this, engine_, record, *in_process_), in_process_->devices());
  log::debug("in-process: ", in_process_->devices().size(), " devices of this node");
}

void Cluster::start_watching() {
  std::call_once(watching_start_, [this] {
    monitor_ = std::make_unique<transport::WatchdogMonitor>();
    std::atexit([] { Cluster::get().shutdown(); });
  });
}

void Cluster::start_mpi() {
  if (proxies_needing_mpi_ > 0) launch_mpi();
}

void Cluster::launch_mpi() {
  start_watching();
  std::call_once(mpi_start_, [this] {
    engine_.start({.spin = config_.poll_spin, .max_sleep = config_.poll_sleep, .max_message_bytes = config_.max_message_bytes},
                  [this] { return init_mpi(); }, [this] { finalize_mpi(); });
  });
}

bool Cluster::wait_mpi() {
  launch_mpi();
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
    const auto settings = transport::standalone_mpi_settings(transport::ompi_server_uri_path(config_.cluster_dir));
    std::vector<std::unique_ptr<transport::ScopedEnvironment>> environment;
    for (const auto& [variable, value] : settings)
      environment.push_back(std::make_unique<transport::ScopedEnvironment>(variable.c_str(), value));
    promote_mpi_symbols();
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return false;
    log::debug("MPI initialised");
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

MPI_Comm Cluster::connect(const transport::WatchdogConnection& watchdog, std::chrono::milliseconds limit) {
  struct Attempt {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    bool abandoned = false;
    MPI_Comm comm = MPI_COMM_NULL;
  };
  auto attempt = std::make_shared<Attempt>();
  std::thread([attempt, port = watchdog.mpi_port(), connect_comm = connect_comm_] {
    MPI_Comm comm = MPI_COMM_NULL;
    if (MPI_Comm_connect(port.c_str(), MPI_INFO_NULL, 0, connect_comm, &comm) != MPI_SUCCESS) comm = MPI_COMM_NULL;
    std::lock_guard lock(attempt->mutex);
    if (attempt->abandoned) return;  // a late connection to a proxy given up: left as it is
    attempt->comm = comm;
    attempt->done = true;
    attempt->done_cv.notify_one();
  }).detach();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_lock lock(attempt->mutex);
  while (!attempt->done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return attempt->done; })) {
    if (watchdog.peer_closed() || std::chrono::steady_clock::now() > deadline) {
      attempt->abandoned = true;
      return MPI_COMM_NULL;
    }
  }
  return attempt->comm;
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
