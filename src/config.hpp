// One configuration module for the client library, the proxy and the tools.
// Every key can be set in a config file ("key = value" lines, '#' comments) and
// overridden by the environment variable HIVECL_<KEY in upper case>. Files read,
// later ones overriding earlier ones: /etc/hivecl/hivecl.conf,
// $XDG_CONFIG_HOME/hivecl/hivecl.conf (or ~/.config/...), then $HIVECL_CONFIG.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace hivecl {

struct Config {
  std::string cluster_dir;              // rendezvous directory of the cluster to use/serve
  std::string nodes;                    // client: only these nodes' devices (comma-separated); empty: all
  std::string log_level = "warn";
  // Start MPI in the background at the first device query instead of at the first call that
  // needs a proxy. Off by default: every hwloc user (Open MPI's orted, Slurm) lists OpenCL
  // devices through hwloc's OpenCL plugin and must not start MPI by doing so.
  bool eager_mpi_init = false;
  std::chrono::milliseconds peer_timeout{5000};     // a silent peer is declared dead after this
  std::chrono::milliseconds connect_timeout{10000}; // connecting to a proxy gives up after this
  std::chrono::microseconds poll_spin{2000};        // busy polling before backing off to sleeps
  uint64_t chunk_bytes = 4u << 20;      // bulk data moves in messages of this size
  uint64_t max_message_bytes = 256u << 20;  // largest control message accepted
  std::string proxy_platform;           // proxy: serve only platforms whose name contains this
  std::string proxy_device_type = "all";  // proxy: all, gpu, cpu, accelerator
  std::string proxy_devices;            // proxy: indices of the devices left by the two filters above
                                        // (comma-separated, from 0); empty: all

  // Loads files and environment as described above; unknown keys are reported.
  static Config load();
  // Applies one "key = value" setting; returns false when the key or value is bad.
  bool set(const std::string& key, const std::string& value);
  // Every setting as "key = value" lines, as a config file would hold them.
  std::string describe() const;
  // Whether the client uses the devices of this node (the `nodes` setting).
  bool uses_node(const std::string& node) const;
  // Whether the proxy serves the device of this index (the `proxy_devices` setting).
  bool serves_device(size_t index) const;
};

// The process-wide configuration, loaded on first use.
const Config& config();

}  // namespace hivecl
