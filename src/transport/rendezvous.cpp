#include "transport/rendezvous.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "log.hpp"
#include "node.hpp"

namespace hivecl::transport {

namespace fs = std::filesystem;
using protocol::ProxyRecord;

std::string ompi_server_uri_path(const std::string& cluster_dir) { return cluster_dir + "/ompi-server.uri"; }
std::string proxies_path(const std::string& cluster_dir) { return cluster_dir + "/proxies"; }

namespace {

std::string record_base(const std::string& cluster_dir, const std::string& node, int32_t pid) {
  return proxies_path(cluster_dir) + "/" + node + "-" + std::to_string(pid);
}

const char* extension(ProxyState state) { return state == ProxyState::serving ? ".proxy" : ".draining"; }

// Readers never see a half-written file.
template <class Record>
bool write_atomically(const std::string& path, const Record& record) {
  const std::string temporary = path + ".tmp";
  const auto bytes = protocol::to_bytes(record);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) return false;
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  return !error;
}

template <class Record>
bool read_record(const fs::path& path, Record& record) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return protocol::from_bytes({begin, text.size()}, record) && record.magic == protocol::frame_magic;
}

}  // namespace

std::string publish_proxy(const std::string& cluster_dir, const ProxyRecord& record) {
  std::error_code error;
  fs::create_directories(proxies_path(cluster_dir), error);
  const std::string path = record_base(cluster_dir, record.node, record.pid) + extension(ProxyState::serving);
  return write_atomically(path, record) ? path : std::string();
}

bool publish_status(const std::string& cluster_dir, const ProxyRecord& record, const protocol::ProxyStatus& status) {
  return write_atomically(record_base(cluster_dir, record.node, record.pid) + ".status", status);
}

void withdraw_status(const std::string& cluster_dir, const ProxyRecord& record) {
  std::error_code error;
  fs::remove(record_base(cluster_dir, record.node, record.pid) + ".status", error);
}

bool read_status(const std::string& cluster_dir, const ProxyRecord& record, protocol::ProxyStatus& status) {
  return read_record(record_base(cluster_dir, record.node, record.pid) + ".status", status);
}

namespace {

bool known_dead(const ProxyRecord& record) {
  return record.node == hivecl::node_name() && ::kill(record.pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

bool mark_draining(const std::string& cluster_dir, const ProxyRecord& record) {
  const std::string base = record_base(cluster_dir, record.node, record.pid);
  std::error_code error;
  fs::rename(base + extension(ProxyState::serving), base + extension(ProxyState::draining), error);
  return !error;
}

void withdraw_draining(const std::string& cluster_dir, const ProxyRecord& record) {
  std::error_code error;
  fs::remove(record_base(cluster_dir, record.node, record.pid) + extension(ProxyState::draining), error);
}

std::vector<ProxyRecord> discover_proxies(const std::string& cluster_dir, ProxyState state) {
  std::vector<std::pair<std::string, ProxyRecord>> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(proxies_path(cluster_dir), error)) {
    if (entry.path().extension() != extension(state)) continue;
    ProxyRecord record;
    if (!read_record(entry.path(), record)) {
      log::warn("rendezvous: ignored unreadable or incompatible record ", entry.path().string());
    } else if (known_dead(record)) {
      log::info("rendezvous: ignored record of a dead proxy ", entry.path().string());
    } else {
      found.emplace_back(entry.path().filename().string(), std::move(record));
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.node, a.first) < std::tie(b.second.node, b.first);
  });
  std::vector<ProxyRecord> records;
  for (auto& [name, record] : found) records.push_back(std::move(record));
  return records;
}

namespace {

bool tcp_connects(const std::string& host, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (port <= 0 || ::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool connected = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  if (fd >= 0) ::close(fd);
  return connected;
}

}  // namespace

bool ompi_server_reachable(const std::string& cluster_dir) {
  std::ifstream in(ompi_server_uri_path(cluster_dir));
  std::string uri;
  std::getline(in, uri);
  // Format: "<jobid>.<vpid>;tcp://A.B.C.D[,E.F.G.H...]:PORT;tcp6://[...]:PORT" (one address per
  // interface that ompi-server listens on).
  const auto start = uri.find("tcp://");
  if (start == std::string::npos) return false;
  const auto colon = uri.find(':', start + 6);
  const auto end = uri.find(';', start);
  if (colon == std::string::npos) return false;
  const int port = std::atoi(uri.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1).c_str());
  std::istringstream hosts(uri.substr(start + 6, colon - start - 6));
  for (std::string host; std::getline(hosts, host, ',');)
    if (tcp_connects(host, port)) return true;
  return false;
}

}  // namespace hivecl::transport
