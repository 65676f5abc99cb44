#include "config.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "hivecl_build_config.hpp"
#include "log.hpp"
#include "transport/peer_memory.hpp"

namespace hivecl {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// Each parser assigns `out` only when the text is valid, so a bad setting keeps the old value.
bool parse_u64(const std::string& text, uint64_t& out, uint64_t min = 0, uint64_t max = UINT64_MAX) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  const uint64_t value = std::strtoull(text.c_str(), &end, 0);
  if (!end || *end != '\0' || value < min || value > max) return false;
  out = value;
  return true;
}

bool parse_bool(const std::string& text, bool& out) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return out = true, true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return out = false, true;
  return false;
}

template <class Duration>
bool parse_duration(const std::string& text, Duration& out) {
  uint64_t count = 0;
  if (!parse_u64(text, count)) return false;
  out = Duration(count);
  return true;
}

// "a, b,c" → {"a", "b", "c"}; empty text → {}.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::istringstream list(text);
  std::string item;
  while (std::getline(list, item, ','))
    if (!trim(item).empty()) items.push_back(trim(item));
  return items;
}

using Setter = std::function<bool(Config&, const std::string&)>;

Setter log_level_setter(std::string Config::*member) {
  return [member](Config& c, const std::string& v) {
    log::Level level;
    if (!log::parse_level(v, level)) return false;
    c.*member = v;
    return true;
  };
}

// A duration in microseconds, or the word `unset` for none.
Setter optional_duration_setter(std::optional<std::chrono::microseconds> Config::*member, std::string unset) {
  return [member, unset](Config& c, const std::string& v) {
    std::chrono::microseconds duration{};
    if (v == unset) {
      (c.*member).reset();
    } else if (parse_duration(v, duration)) {
      c.*member = duration;
    } else {
      return false;
    }
    return true;
  };
}

std::string launch_gate_setting(const Config& config) {
  if (!config.launch_gate) return "off";
  if (config.launch_gate == automatic_launch_gate && config.launch_gate_platform == automatic_launch_gate_platform)
    return "auto";
  return std::to_string(config.launch_gate->count());
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table{
      {"cluster_dir", [](Config& c, const std::string& v) {
         if (v.empty()) return false;
         c.cluster_dir = v;
         return true;
       }},
      {"nodes", [](Config& c, const std::string& v) { c.nodes = v; return true; }},
      {"log", log_level_setter(&Config::log_level)},
      {"proxy_log", log_level_setter(&Config::proxy_log_level)},
      {"eager_mpi_init", [](Config& c, const std::string& v) { return parse_bool(v, c.eager_mpi_init); }},
      {"launch_gate_us", [](Config& c, const std::string& v) {
         if (v == "auto") {
           c.launch_gate = automatic_launch_gate;
           c.launch_gate_platform = automatic_launch_gate_platform;
           return true;
         }
         if (!optional_duration_setter(&Config::launch_gate, "off")(c, v)) return false;
         c.launch_gate_platform.clear();
         return true;
       }},
      {"peer_timeout_ms", [](Config& c, const std::string& v) { return parse_duration(v, c.peer_timeout); }},
      {"connect_timeout_ms", [](Config& c, const std::string& v) { return parse_duration(v, c.connect_timeout); }},
      {"poll_spin_us", [](Config& c, const std::string& v) { return parse_duration(v, c.poll_spin); }},
      {"poll_sleep_us", [](Config& c, const std::string& v) { return parse_duration(v, c.poll_sleep); }},
      {"proxy_poll_spin_us", optional_duration_setter(&Config::proxy_poll_spin, "auto")},
      // Whole pages, so that a chunk also ends on a whole pixel of any image (proxy/peers.cpp).
      {"chunk_bytes", [](Config& c, const std::string& v) {
         uint64_t bytes = 0;
         if (!parse_u64(v, bytes, 4096, 1u << 30) || bytes % 4096 != 0) return false;
         c.chunk_bytes = bytes;
         return true;
       }},
      {"data_path", [](Config& c, const std::string& v) {
         transport::DataPathChoice choice;
         if (!transport::parse_data_path_choice(v, choice)) return false;
         c.data_path = v;
         return true;
       }},
      {"control_path", [](Config& c, const std::string& v) {
         if (v != "auto" && v != "mpi") return false;
         c.control_path = v;
         return true;
       }},
      {"local_devices", [](Config& c, const std::string& v) {
         if (v != "auto" && v != "in-process" && v != "proxy" && v != "hidden") return false;
         c.local_devices = v;
         return true;
       }},
      {"local_libraries", [](Config& c, const std::string& v) { c.local_libraries = v; return true; }},
      {"local_proxy_moves", [](Config& c, const std::string& v) {
         if (v != "application" && v != "proxy") return false;
         c.local_proxy_moves = v;
         return true;
       }},
      {"staging_slots", [](Config& c, const std::string& v) { return parse_u64(v, c.staging_slots, 1, 1024); }},
      {"copy_threads", [](Config& c, const std::string& v) { return parse_u64(v, c.copy_threads, 0, 256); }},
      {"max_message_bytes",
       [](Config& c, const std::string& v) { return parse_u64(v, c.max_message_bytes, 65536, (1ull << 31) - 1); }},
      {"proxy_platform", [](Config& c, const std::string& v) { c.proxy_platform = v; return true; }},
      {"proxy_devices", [](Config& c, const std::string& v) {
         uint64_t index = 0;
         const auto indices = comma_list(v);
         if (!std::all_of(indices.begin(), indices.end(), [&](const auto& i) { return parse_u64(i, index); }))
           return false;
         c.proxy_devices = v;
         return true;
       }},
      {"proxy_replacement_file", [](Config& c, const std::string& v) { c.proxy_replacement_file = v; return true; }},
      {"proxy_device_type", [](Config& c, const std::string& v) {
         if (v != "all" && v != "gpu" && v != "cpu" && v != "accelerator") return false;
         c.proxy_device_type = v;
         return true;
       }},
      {"session_max_objects", [](Config& c, const std::string& v) { return parse_u64(v, c.session_max_objects); }},
      {"session_max_memory_bytes",
       [](Config& c, const std::string& v) { return parse_u64(v, c.session_max_memory_bytes); }},
      {"secret_file", [](Config& c, const std::string& v) { c.secret_file = v; return true; }},
  };
  return table;
}

void load_file(Config& config, const std::string& path) {
  std::ifstream in(path);
  if (!in) return;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos || !config.set(trim(line.substr(0, eq)), trim(line.substr(eq + 1))))
      log::warn("config ", path, ":", number, ": ignored '", line, "'");
  }
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string env_name(const std::string& key) {
  std::string name = "HIVECL_";
  for (char c : key) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

bool Config::set(const std::string& key, const std::string& value) {
  const auto it = setters().find(key);
  return it != setters().end() && it->second(*this, value);
}

std::string Config::describe() const {
  std::ostringstream text;
  text << "cluster_dir = " << cluster_dir << "\n"
       << "nodes = " << nodes << "\n"
       << "log = " << log_level << "\n"
       << "proxy_log = " << proxy_log_level << "\n"
       << "eager_mpi_init = " << (eager_mpi_init ? "true" : "false") << "\n"
       << "launch_gate_us = " << launch_gate_setting(*this) << "\n"
       << "peer_timeout_ms = " << peer_timeout.count() << "\n"
       << "connect_timeout_ms = " << connect_timeout.count() << "\n"
       << "poll_spin_us = " << poll_spin.count() << "\n"
       << "poll_sleep_us = " << poll_sleep.count() << "\n"
       << "proxy_poll_spin_us = " << (proxy_poll_spin ? std::to_string(proxy_poll_spin->count()) : "auto") << "\n"
       << "chunk_bytes = " << chunk_bytes << "\n"
       << "data_path = " << data_path << "\n"
       << "control_path = " << control_path << "\n"
       << "local_devices = " << local_devices << "\n"
       << "local_libraries = " << local_libraries << "\n"
       << "local_proxy_moves = " << local_proxy_moves << "\n"
       << "staging_slots = " << staging_slots << "\n"
       << "copy_threads = " << copy_threads << "\n"
       << "max_message_bytes = " << max_message_bytes << "\n"
       << "proxy_platform = " << proxy_platform << "\n"
       << "proxy_device_type = " << proxy_device_type << "\n"
       << "proxy_devices = " << proxy_devices << "\n"
       << "proxy_replacement_file = " << proxy_replacement_file << "\n"
       << "session_max_objects = " << session_max_objects << "\n"
       << "session_max_memory_bytes = " << session_max_memory_bytes << "\n"
       << "secret_file = " << secret_file << "\n";
  return text.str();
}

std::chrono::microseconds Config::session_poll_spin() const {
  if (proxy_poll_spin) return *proxy_poll_spin;
  static const unsigned cores = std::thread::hardware_concurrency();
  return cores >= 8 ? std::chrono::microseconds(20000) : poll_spin;
}

bool Config::uses_node(const std::string& node) const {
  const auto wanted = comma_list(nodes);
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), node) != wanted.end();
}

bool Config::serves_device(size_t index) const {
  const auto wanted = comma_list(proxy_devices);
  return wanted.empty() || std::any_of(wanted.begin(), wanted.end(), [&](const auto& i) {
           return std::stoull(i) == index;  // digits: checked when set
         });
}

Config Config::load() {
  Config config;
  const std::string home = env_or("HOME", "/tmp");
  // Inside a Slurm job, the job's own cluster: jobs of one user do not meet by default.
  const std::string slurm_job = env_or("SLURM_JOB_ID", "");
  config.cluster_dir = home + "/.hivecl/" + (slurm_job.empty() ? "default" : "slurm-" + slurm_job);
  load_file(config, std::string(HIVECL_SYSCONFDIR) + "/hivecl/hivecl.conf");
  if (std::string(HIVECL_SYSCONFDIR) != "/etc") load_file(config, "/etc/hivecl/hivecl.conf");
  load_file(config, env_or("XDG_CONFIG_HOME", home + "/.config") + "/hivecl/hivecl.conf");
  if (const char* explicit_file = std::getenv("HIVECL_CONFIG")) load_file(config, explicit_file);
  for (const auto& [key, setter] : setters()) {
    const std::string name = env_name(key);
    if (const char* value = std::getenv(name.c_str()); value && *value && !setter(config, value))
      log::warn("ignored ", name, "='", value, "'");
  }
  log::Level level = log::Level::warn;
  if (log::parse_level(config.log_level, level)) log::set_level(level);
  return config;
}

const Config& config() {
  static const Config loaded = Config::load();
  return loaded;
}

}  // namespace hivecl
