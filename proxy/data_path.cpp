#include "proxy/data_path.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "log.hpp"
#include "node.hpp"
#include "transport/rendezvous.hpp"
#include "transport/tags.hpp"

namespace hivecl::proxy {

using transport::Completion;
using transport::OpStatus;

namespace {

std::shared_ptr<Completion> completed(bool ok) {
  auto completion = std::make_shared<Completion>();
  completion->complete(ok ? OpStatus::done : OpStatus::failed);
  return completion;
}

}  // namespace

std::shared_ptr<Completion> MpiDataPath::fetch(uint64_t sequence, uint64_t, uint64_t, std::byte* slot, size_t size) {
  return link_->receive_chunk(sequence, slot, size);
}

void MpiDataPath::deliver(uint64_t sequence, uint64_t, uint64_t, const std::byte* slot, size_t size,
                          std::function<void()> sent) {
  link_->send_chunk(sequence, slot, size, std::move(sent));
}

std::shared_ptr<Completion> MemoryDataPath::fetch(uint64_t, uint64_t host_address, uint64_t offset, std::byte* slot,
                                                  size_t size) {
  return completed(client_.read(host_address + offset, slot, size));
}

// A client that vanished gets nothing; its session ends through the watchdog.
void MemoryDataPath::deliver(uint64_t, uint64_t host_address, uint64_t offset, const std::byte* slot, size_t size,
                             std::function<void()> sent) {
  if (!client_.write(host_address + offset, slot, size))
    log::debug("could not write ", size, " bytes into the client: ", std::strerror(errno));
  sent();
}

std::shared_ptr<Completion> DataPath::fetch_rows(const transport::PeerRows&, std::byte*) {
  log::error("rows in the client's memory asked of the ", transport::data_path_name(kind()), " data path");
  return completed(false);
}

void DataPath::deliver_rows(const transport::PeerRows&, const std::byte*, std::function<void()> sent) {
  log::error("rows in the client's memory asked of the ", transport::data_path_name(kind()), " data path");
  sent();
}

std::shared_ptr<Completion> MemoryDataPath::fetch_rows(const transport::PeerRows& rows, std::byte* slot) {
  return completed(client_.read_rows(rows, slot));
}

void MemoryDataPath::deliver_rows(const transport::PeerRows& rows, const std::byte* slot, std::function<void()> sent) {
  if (!client_.write_rows(rows, slot)) log::debug("could not write rows into the client: ", std::strerror(errno));
  sent();
}

// Half the cores, at most 8: with 16 MiB chunks, copies of 1 MiB parts or more (PeerMemory::copy)
// on 8 threads moved 64-256 MiB about twice as fast as on 4 (docs/PERFORMANCE.md).
transport::CopyTeam& copy_team(size_t configured_threads) {
  static transport::CopyTeam team(configured_threads
                                      ? configured_threads
                                      : std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8));
  return team;
}

std::unique_ptr<DataPath> choose_data_path(const protocol::Hello::Request& hello, const protocol::Bytes& proof,
                                           uint32_t session, const ClientLinkPtr& link, size_t copy_threads) {
  const auto choice = static_cast<transport::DataPathChoice>(hello.data_path);
  const char* why_not = nullptr;
  if (choice == transport::DataPathChoice::mpi) {
    why_not = "the client asked for MPI";
  } else if (hello.host != hivecl::node_name() || hello.boot_id.empty() || hello.boot_id != transport::boot_id()) {
    why_not = "the client runs on another node";
  } else if (hello.pid == ::getpid() || hello.probe.empty() || hello.probe != proof) {
    log::warn("session ", session, ": a Hello whose probe is not its watchdog connection's proof, or that names this "
              "proxy's own process");
    why_not = "its probe proves nothing";
  } else {
    transport::PeerMemory client(hello.pid, copy_team(copy_threads));
    std::vector<std::byte> probe(hello.probe.size());
    if (probe.empty() || !client.read(hello.probe_address, probe.data(), probe.size()) || probe != hello.probe) {
      log::info("session ", session, ": cannot read the client's memory (", std::strerror(errno),
                "): ptrace permission (same user; Yama ptrace_scope)?");
      why_not = "the client's memory cannot be reached";
    } else {
      log::info("session ", session, ": data path memory (process_vm_readv/writev, ", copy_team(copy_threads).size(),
                " copy threads)");
      return std::make_unique<MemoryDataPath>(client);
    }
  }
  log::info("session ", session, ": data path mpi (", why_not, ")");
  return std::make_unique<MpiDataPath>(link);
}

}  // namespace hivecl::proxy
