// The same-node data path: the proxy copies straight between the client's memory and
// its own staging memory with process_vm_readv/writev (one copy, no MPI, no shared
// segment to manage). It needs ptrace permission over the client: the same user and,
// under Yama's ptrace_scope 1, the client naming the proxy with PR_SET_PTRACER
// (grant_peer_access). A probe at the handshake proves the access before it is used.
// Large copies are split over several threads: one thread copies slower than a GPU takes data.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hivecl::transport {

// Which way bulk data moves between a client and a proxy.
// in_process: libhivecl runs the executors itself (transport/in_process.hpp), no copy at all.
enum class DataPath : uint8_t { mpi, memory, in_process };
// The data_path setting: what the client asks for.
enum class DataPathChoice : uint8_t { automatic, mpi, memory };

const char* data_path_name(DataPath path);
// Whether the proxy reaches the client's memory itself (by address, or as shared segments).
inline bool moves_by_memory(DataPath path) { return path != DataPath::mpi; }
bool parse_data_path_choice(const std::string& text, DataPathChoice& out);

// This boot of this machine (two processes with equal ids share a kernel).
std::string boot_id();

// Client side: lets `proxy_pid` read and write this process's memory where Yama
// restricts ptrace to descendants; the first local proxy gets it (Yama keeps one).
void grant_peer_access(pid_t proxy_pid);

// Runs a job split into parts on a fixed set of threads (the caller's one of them).
class CopyTeam {
 public:
  explicit CopyTeam(size_t threads);
  CopyTeam(const CopyTeam&) = delete;
  CopyTeam& operator=(const CopyTeam&) = delete;
  ~CopyTeam();
  size_t size() const { return helpers_.size() + 1; }
  // Calls part(i) for i in [0, parts) across the team; returns when all are done.
  void run(size_t parts, const std::function<void(size_t)>& part);

 private:
  void help();
  bool take_part(size_t& index);

  std::vector<std::thread> helpers_;
  std::mutex mutex_;  // one job at a time
  std::mutex job_mutex_;  // the job's state
  std::condition_variable work_cv_;
  const std::function<void(size_t)>* part_ = nullptr;
  size_t parts_ = 0, next_ = 0;
  std::atomic<size_t> finished_ = 0;  // also read without job_mutex_
  std::atomic<uint64_t> generation_ = 0;  // also read without job_mutex_
  bool stopping_ = false;
};

// Rows of another process's memory laid out with pitches (a box: `rows` rows per slice of
// `row_bytes` each, the first at `address`), copied to or from packed local memory.
struct PeerRows {
  uint64_t address = 0;
  size_t row_bytes = 0;
  size_t rows = 0;
  size_t slices = 0;
  uint64_t row_pitch = 0;
  uint64_t slice_pitch = 0;
  // The remote address of row `index` (counted across slices).
  uint64_t row(size_t index) const { return address + index / rows * slice_pitch + index % rows * row_pitch; }
};

// Whether ranges of a process's memory lie in huge pages, asked of the kernel's page map
// (PAGEMAP_SCAN, Linux 6.7). Parts of a copy that share a 2 MiB stretch of 4 KiB pages go no
// faster together than one thread alone; in huge pages they do (docs/FINDINGS.md).
class PageMap {
 public:
  explicit PageMap(pid_t pid);
  PageMap(const PageMap&) = delete;
  PageMap& operator=(const PageMap&) = delete;
  ~PageMap();
  // False where the kernel, or our access to the process, cannot tell.
  bool available() const { return fd_ >= 0; }
  // No page of [address, address + size) is absent or small (unmapped ones are not looked at:
  // a copy of them fails anyway).
  bool huge(uint64_t address, size_t size) const;

 private:
  // Regions of pages in the range that are not huge, at most one; -1 if the kernel cannot tell.
  int count_small_pages(uint64_t address, size_t size) const;

  int fd_;
};

// Another process's memory, reached with process_vm_readv/writev.
class PeerMemory {
 public:
  PeerMemory(pid_t pid, CopyTeam& team) : pid_(pid), team_(&team), pages_(std::make_shared<const PageMap>(pid)) {}
  // False when the process is gone or does not let us in (errno says why).
  bool read(uint64_t remote_address, void* local, size_t size) const;
  bool write(uint64_t remote_address, const void* local, size_t size) const;
  // A box of rows, gathered into (or scattered from) packed local memory: many rows per system call.
  bool read_rows(const PeerRows& rows, void* local) const;
  bool write_rows(const PeerRows& rows, const void* local) const;

 private:
  bool copy(uint64_t remote_address, void* local, size_t size, bool reads) const;
  bool copy_rows(const PeerRows& rows, std::byte* local, bool reads) const;
  size_t min_part_bytes(uint64_t remote_address, size_t size) const;

  pid_t pid_;
  CopyTeam* team_;
  std::shared_ptr<const PageMap> pages_;  // shared by the copies of this value
};

}  // namespace hivecl::transport
