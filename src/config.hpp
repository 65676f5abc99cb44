// One configuration module for the client library, the proxy and the tools.
// Every key can be set in a config file ("key = value" lines, '#' comments) and
// overridden by the environment variable HIVECL_<KEY in upper case>. Files read,
// later ones overriding earlier ones: /etc/hivecl/hivecl.conf,
// $XDG_CONFIG_HOME/hivecl/hivecl.conf (or ~/.config/...), then $HIVECL_CONFIG.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace hivecl {

// launch_gate_us = auto: NVIDIA's runtime is slow to submit a launch (docs/FINDINGS.md); other
// runtimes were not measured with the gate.
inline constexpr std::chrono::microseconds automatic_launch_gate{5};
inline constexpr const char* automatic_launch_gate_platform = "NVIDIA";

struct Config {
  std::string cluster_dir;              // rendezvous directory of the cluster to use/serve
  std::string nodes;                    // client: only these nodes' devices (comma-separated); empty: all
  std::string log_level = "warn";
  std::string proxy_log_level = "info";  // hivecl-proxy's own level: it logs sessions at info
  // Start MPI in the background at the first device query instead of at the first call that
  // needs a proxy. Off by default: every hwloc user (Open MPI's orted, Slurm) lists OpenCL
  // devices through hwloc's OpenCL plugin and must not start MPI by doing so.
  bool eager_mpi_init = false;
  // Proxy and in-process: a burst of launches each taking this long natively is held behind a
  // gate (proxy/launch_gate.hpp), on the queues of platforms whose name contains
  // `launch_gate_platform` (empty: every platform); 0: every burst; none: never. The setting
  // `launch_gate_us = auto` (the default) is 5 µs on NVIDIA's platform only, where it was measured.
  std::optional<std::chrono::microseconds> launch_gate = automatic_launch_gate;
  std::string launch_gate_platform = automatic_launch_gate_platform;
  std::chrono::milliseconds peer_timeout{5000};     // a silent peer is declared dead after this
  std::chrono::milliseconds connect_timeout{10000}; // connecting to a proxy gives up after this
  std::chrono::microseconds poll_spin{2000};        // busy polling before backing off to sleeps
  std::chrono::microseconds poll_sleep{100};        // the longest of those sleeps: the worst added latency
  // proxy: how long the threads that take a session's requests (its channel reader, its
  // worker, the MPI progress thread) poll after the last one before they sleep; unset: auto
  std::optional<std::chrono::microseconds> proxy_poll_spin;
  uint64_t chunk_bytes = 16u << 20;     // bulk data moves in pieces (staging slots, MPI messages) of this size
  std::string data_path = "auto";       // client: auto, mpi or memory (same node: the proxy copies directly)
  // client: auto (control frames through shared memory where the data path is memory) or mpi
  std::string control_path = "auto";
  // client: the devices of this node: auto (in-process unless a proxy of the cluster runs on
  // this node), in-process (the proxy's executors inside the application, no MPI), proxy (through
  // the node's proxy only) or hidden (neither)
  std::string local_devices = "auto";
  // client: the vendor ICD libraries served in-process (':'-separated); empty: those of
  // OCL_ICD_FILENAMES and of the OCL_ICD_VENDORS directory (or /etc/OpenCL/vendors)
  std::string local_libraries;
  // client: how buffer and image data of a context over several proxies moves between two
  // proxies that this process reaches through shared memory (proxies of this node):
  // application (through this process, over shared memory both ways) or proxy (proxy to proxy,
  // over MPI, which joins two proxies' jobs over TCP)
  std::string local_proxy_moves = "application";
  uint64_t staging_slots = 4;           // proxy: staging slots of chunk_bytes per context (1: no pipeline)
  uint64_t copy_threads = 0;            // proxy: threads per same-node copy (0: by the number of cores)
  uint64_t max_message_bytes = 256u << 20;  // largest control message accepted
  std::string proxy_platform;           // proxy: serve only platforms whose name contains this
  std::string proxy_device_type = "all";  // proxy: all, gpu, cpu, accelerator
  std::string proxy_devices;            // proxy: indices of the devices left by the two filters above
                                        // (comma-separated, from 0); empty: all
  // proxy: a file it creates when a client's death has wedged its MPI accept, before it
  // serves its sessions to their end and exits (75): its supervisor (hivecl-cluster) then
  // starts a replacement at once. Empty: none; the replacement comes after the exit.
  std::string proxy_replacement_file;
  // proxy: caps per client session (0: none) on objects held and on buffer bytes allocated
  uint64_t session_max_objects = 0;
  uint64_t session_max_memory_bytes = 0;
  // A file holding the cluster's shared secret (readable by its owner only); empty: no
  // authentication. Proxies refuse clients that cannot prove they know it.
  std::string secret_file;

  // Loads files and environment as described above; unknown keys are reported.
  static Config load();
  // Applies one "key = value" setting; returns false when the key or value is bad.
  bool set(const std::string& key, const std::string& value);
  // Every setting as "key = value" lines, as a config file would hold them.
  std::string describe() const;
  // proxy_poll_spin, or by default 20 ms on a node of 8 cores or more (a GPU node: woken
  // threads took 30-200 us there, 5% of a GPU-bound program's rounds a few ms apart), else
  // poll_spin (on a small machine the polling threads would take the cores from the device).
  std::chrono::microseconds session_poll_spin() const;
  // Whether the client uses the devices of this node (the `nodes` setting).
  bool uses_node(const std::string& node) const;
  // Whether the proxy serves the device of this index (the `proxy_devices` setting).
  bool serves_device(size_t index) const;
};

// The process-wide configuration, loaded on first use.
const Config& config();

}  // namespace hivecl
