#include "proxy/status.hpp"

#include <CL/cl.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <ostream>
#include <string>
#include <vector>

#include "transport/rendezvous.hpp"

namespace hivecl::proxy {
namespace {

using protocol::DeviceRecord;
using protocol::ProxyRecord;
using protocol::ProxyStatus;
using protocol::SessionStatus;

std::string device_name(const DeviceRecord& device) {
  for (const auto& entry : device.info)
    if (entry.param == CL_DEVICE_NAME && entry.error == CL_SUCCESS)
      return std::string(reinterpret_cast<const char*>(entry.value.data()),
                         strnlen(reinterpret_cast<const char*>(entry.value.data()), entry.value.size()));
  return "?";
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string human_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

std::string clock_time(int64_t seconds) {
  const std::time_t time = seconds;
  std::tm local{};
  localtime_r(&time, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

struct ProxyView {
  ProxyRecord record;
  bool draining;  // admits no new clients (transport/rendezvous.hpp)
  bool has_status;
  ProxyStatus status;
};

void print_text(const std::vector<ProxyView>& proxies, std::ostream& out) {
  for (const auto& [record, draining, has_status, status] : proxies) {
    out << "proxy on " << record.node << ", pid " << record.pid
        << (draining ? " (draining: admits no new clients, exits after its last session)" : "") << "\n";
    for (const auto& device : record.devices) {
      out << "  device " << device.id << ": " << device_name(device) << " (" << device.native_platform << ")";
      if (!device.pci_bus_id.empty()) out << ", PCI " << device.pci_bus_id;
      if (device.numa_node >= 0) out << ", NUMA node " << device.numa_node;
      out << "\n";
    }
    if (!has_status) {
      out << "  no status reported yet\n";
      continue;
    }
    out << "  clients: " << status.sessions.size() << " (as of " << clock_time(status.updated_at) << ")\n";
    for (const SessionStatus& session : status.sessions)
      out << "  session " << session.session << ": client " << session.client_host << " pid " << session.client_pid
          << " since " << clock_time(session.connected_at) << "; " << session.objects << " objects, "
          << human_bytes(session.device_bytes) << " device memory, " << human_bytes(session.bytes_to_proxy)
          << " in, " << human_bytes(session.bytes_to_client) << " out, " << session.calls << " calls\n";
  }
}

void print_json(const Config& config, const std::vector<ProxyView>& proxies, std::ostream& out) {
  out << "{\"cluster_dir\": " << quoted(config.cluster_dir) << ", \"proxies\": [";
  const char* proxy_separator = "";
  for (const auto& [record, draining, has_status, status] : proxies) {
    out << proxy_separator << "\n  {\"node\": " << quoted(record.node) << ", \"pid\": " << record.pid
        << ", \"draining\": " << (draining ? "true" : "false") << ", \"devices\": [";
    const char* separator = "";
    for (const auto& device : record.devices) {
      out << separator << "{\"id\": " << device.id << ", \"name\": " << quoted(device_name(device))
          << ", \"platform\": " << quoted(device.native_platform) << ", \"pci_bus_id\": "
          << (device.pci_bus_id.empty() ? "null" : quoted(device.pci_bus_id))
          << ", \"numa_node\": " << (device.numa_node >= 0 ? std::to_string(device.numa_node) : "null") << "}";
      separator = ", ";
    }
    out << "], \"status_updated_at\": " << (has_status ? std::to_string(status.updated_at) : "null")
        << ", \"sessions\": [";
    separator = "";
    for (const SessionStatus& session : status.sessions) {
      out << separator << "\n    {\"session\": " << session.session << ", \"client_host\": "
          << quoted(session.client_host) << ", \"client_pid\": " << session.client_pid
          << ", \"connected_at\": " << session.connected_at << ", \"objects\": " << session.objects
          << ", \"device_bytes\": " << session.device_bytes << ", \"bytes_to_proxy\": " << session.bytes_to_proxy
          << ", \"bytes_to_client\": " << session.bytes_to_client << ", \"calls\": " << session.calls << "}";
      separator = ",";
    }
    out << "]}";
    proxy_separator = ",";
  }
  out << "]}\n";
}

}  // namespace

int print_status(const Config& config, bool json, std::ostream& out) {
  std::vector<ProxyView> proxies;
  for (const auto state : {transport::ProxyState::serving, transport::ProxyState::draining}) {
    for (auto& record : transport::discover_proxies(config.cluster_dir, state)) {
      ProxyView view{.record = std::move(record), .draining = state == transport::ProxyState::draining,
                     .has_status = false, .status = {}};
      view.has_status = transport::read_status(config.cluster_dir, view.record, view.status);
      proxies.push_back(std::move(view));
    }
  }
  if (json) {
    print_json(config, proxies, out);
  } else if (proxies.empty()) {
    out << "no proxy in " << config.cluster_dir << "\n";
  } else {
    print_text(proxies, out);
  }
  return proxies.empty() ? 1 : 0;
}

}  // namespace hivecl::proxy
