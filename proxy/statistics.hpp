// Counters of one session for `hivecl-cluster status`: updated by the executors, one request
// at a time (add_as_sole_writer), read once a second by the status writer. What the session
// holds is its SessionUsage's.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>

#include "protocol/messages.hpp"
#include "proxy/usage.hpp"

namespace hivecl::proxy {

class SessionStatistics {
 public:
  void count_call() { add_as_sole_writer(calls_, 1); }
  void count_to_proxy(uint64_t bytes) { add_as_sole_writer(bytes_to_proxy_, bytes); }
  void count_to_client(uint64_t bytes) { add_as_sole_writer(bytes_to_client_, bytes); }
  void set_client(std::string host, int32_t pid) {
    std::lock_guard lock(client_mutex_);
    client_host_ = std::move(host);
    client_pid_ = pid;
  }

  protocol::SessionStatus snapshot(uint32_t session, const SessionUsage& usage) const {
    protocol::SessionStatus status{.session = session,
                                   .connected_at = connected_at_,
                                   .objects = usage.objects(),
                                   .device_bytes = usage.memory_bytes(),
                                   .bytes_to_proxy = bytes_to_proxy_.load(std::memory_order_relaxed),
                                   .bytes_to_client = bytes_to_client_.load(std::memory_order_relaxed),
                                   .calls = calls_.load(std::memory_order_relaxed)};
    std::lock_guard lock(client_mutex_);
    status.client_host = client_host_;
    status.client_pid = client_pid_;
    return status;
  }

 private:
  const int64_t connected_at_ = std::time(nullptr);
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> bytes_to_proxy_{0};
  std::atomic<uint64_t> bytes_to_client_{0};
  mutable std::mutex client_mutex_;
  std::string client_host_;
  int32_t client_pid_ = 0;
};

}  // namespace hivecl::proxy
