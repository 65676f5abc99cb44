#include "transport/peer_memory.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <fstream>
#include <string>
#include <vector>

#include "transport/polling.hpp"

namespace hivecl::transport {

const char* data_path_name(DataPath path) {
  switch (path) {
    case DataPath::memory: return "memory";
    case DataPath::in_process: return "in-process";
    case DataPath::mpi: break;
  }
  return "mpi";
}

bool parse_data_path_choice(const std::string& text, DataPathChoice& out) {
  if (text == "auto") out = DataPathChoice::automatic;
  else if (text == "mpi") out = DataPathChoice::mpi;
  else if (text == "memory" || text == "shm") out = DataPathChoice::memory;
  else return false;
  return true;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

void grant_peer_access(pid_t proxy_pid) {
  static std::atomic<pid_t> granted{0};
  pid_t none = 0;
  if (granted.compare_exchange_strong(none, proxy_pid)) prctl(PR_SET_PTRACER, static_cast<unsigned long>(proxy_pid));
}

namespace {

// Copy jobs come in bursts (a transfer's chunks, blocking transfers one after another): a helper
// polls this long for the next before it sleeps and must be woken (polling.hpp).
constexpr auto poll_for_next_job = std::chrono::microseconds(500);

}  // namespace

CopyTeam::CopyTeam(size_t threads) {
  for (size_t i = 1; i < std::max<size_t>(threads, 1); ++i) helpers_.emplace_back([this] { help(); });
}

CopyTeam::~CopyTeam() {
  {
    std::lock_guard lock(job_mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& helper : helpers_) helper.join();
}

bool CopyTeam::take_part(size_t& index) {
  if (!part_ || next_ >= parts_) return false;
  index = next_++;
  return true;
}

void CopyTeam::run(size_t parts, const std::function<void(size_t)>& part) {
  if (helpers_.empty() || parts <= 1) {
    for (size_t i = 0; i < parts; ++i) part(i);
    return;
  }
  std::lock_guard one_job(mutex_);
  std::unique_lock lock(job_mutex_);
  part_ = &part;
  parts_ = parts;
  next_ = finished_ = 0;
  ++generation_;
  // Helpers still polling after the last job take parts at once; as many as there are parts to
  // share are woken, as each wake-up costs the machine tens of microseconds (polling.hpp).
  for (size_t woken = 0; woken < std::min(parts - 1, helpers_.size()); ++woken) work_cv_.notify_one();
  for (size_t index = 0; take_part(index);) {
    lock.unlock();
    part(index);
    lock.lock();
    ++finished_;
  }
  // Only parts the helpers took are left, each ending within a part's time: yielding until
  // then costs less than sleeping and being woken.
  lock.unlock();
  while (finished_.load() < parts) std::this_thread::yield();
  lock.lock();
  part_ = nullptr;
}

void CopyTeam::help() {
  uint64_t seen = 0;
  while (true) {
    poll_for([&] { return generation_.load() != seen; }, poll_for_next_job);
    std::unique_lock lock(job_mutex_);
    work_cv_.wait(lock, [&] { return stopping_ || (part_ && generation_ != seen && next_ < parts_); });
    if (stopping_) return;
    seen = generation_;
    const auto* part = part_;
    for (size_t index = 0; take_part(index);) {
      lock.unlock();
      (*part)(index);
      lock.lock();
      ++finished_;
    }
  }
}

namespace {

// The kernel's PAGEMAP_SCAN interface (linux/fs.h since Linux 6.7), spelled out for older headers.
struct PageRegion {
  uint64_t start, end, categories;
};
struct PageMapScan {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
  uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
static_assert(sizeof(PageMapScan) == 96);
constexpr unsigned long pagemap_scan = _IOWR('f', 16, PageMapScan);
constexpr uint64_t page_is_huge = 1u << 6;
constexpr uint64_t small_page = 4096;

}  // namespace

PageMap::PageMap(pid_t pid) : fd_(::open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ >= 0 && count_small_pages(0, 0) < 0) {  // an empty range asks only whether the kernel has the call
    ::close(fd_);
    fd_ = -1;
  }
}

PageMap::~PageMap() {
  if (fd_ >= 0) ::close(fd_);
}

int PageMap::count_small_pages(uint64_t address, size_t size) const {
  PageRegion found{};
  PageMapScan scan{.size = sizeof scan,
                   .start = address & ~(small_page - 1),
                   .end = (address + size + small_page - 1) & ~(small_page - 1),
                   .vec = reinterpret_cast<uint64_t>(&found),
                   .vec_len = 1,
                   .max_pages = 1,  // the first page found that is not huge is enough
                   .category_inverted = page_is_huge,
                   .category_mask = page_is_huge,
                   .return_mask = page_is_huge};
  return ::ioctl(fd_, pagemap_scan, &scan);
}

bool PageMap::huge(uint64_t address, size_t size) const {
  return fd_ >= 0 && size > 0 && count_small_pages(address, size) == 0;
}

namespace {

// A copy is split into parts of at least this much. In 4 KiB pages, parts that share a 2 MiB
// stretch of the other process's memory copy no faster together than one thread alone (the H100
// machine: a 2 MiB copy in eight 256 KiB parts 213-268 us, on one thread 185-230), so parts of
// 1 MiB. In huge pages parts scale, and through a proxy eight parts of a 4 MiB copy beat four
// (blocking 4 MiB downloads 38-48 GB/s against 15-23), while 1-2 MiB copies lost 10-20% in
// more parts than the 1 MiB ones: smaller parts from 4 MiB only.
constexpr size_t min_part_in_small_pages = 1u << 20;
constexpr size_t min_part_in_huge_pages = 512u << 10;
constexpr size_t min_copy_for_huge_parts = 4u << 20;

// One process_vm_readv/writev call moves at most what the kernel accepts at once; loop on partial copies.
bool copy_part(pid_t pid, uint64_t remote_address, std::byte* local, size_t size, bool reads) {
  while (size > 0) {
    iovec local_iov{local, size};
    iovec remote_iov{reinterpret_cast<void*>(remote_address), size};
    const ssize_t moved = reads ? process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0)
                                : process_vm_writev(pid, &local_iov, 1, &remote_iov, 1, 0);
    if (moved <= 0) {
      if (moved < 0 && errno == EINTR) continue;
      return false;
    }
    local += moved;
    remote_address += static_cast<uint64_t>(moved);
    size -= static_cast<size_t>(moved);
  }
  return true;
}

// Rows [first, first + count) of `rows` from or into packed local memory, up to IOV_MAX rows per
// call. The kernel never splits a row (an iovec), so a short count ends at a row it could not
// reach, or at its limit for one call: the copy goes on from the next row until a call moves nothing.
bool copy_rows_part(pid_t pid, const PeerRows& rows, size_t first, size_t count, std::byte* local, bool reads) {
  std::vector<iovec> remote(std::min<size_t>(count, IOV_MAX));
  while (count > 0) {
    const size_t batch = std::min(count, remote.size());
    for (size_t i = 0; i < batch; ++i) remote[i] = {reinterpret_cast<void*>(rows.row(first + i)), rows.row_bytes};
    iovec local_iov{local, batch * rows.row_bytes};
    const ssize_t moved = reads ? process_vm_readv(pid, &local_iov, 1, remote.data(), batch, 0)
                                : process_vm_writev(pid, &local_iov, 1, remote.data(), batch, 0);
    if (moved <= 0) {
      if (moved < 0 && errno == EINTR) continue;
      return false;
    }
    const size_t whole = static_cast<size_t>(moved) / rows.row_bytes;
    if (whole * rows.row_bytes != static_cast<size_t>(moved)) return false;
    first += whole;
    count -= whole;
    local += moved;
  }
  return true;
}

}  // namespace

size_t PeerMemory::min_part_bytes(uint64_t remote_address, size_t size) const {
  // Asked only where the answer changes the split: a copy the team would cut into fewer parts.
  const bool splits_finer = size >= min_copy_for_huge_parts && size < team_->size() * min_part_in_small_pages;
  return splits_finer && pages_->huge(remote_address, size) ? min_part_in_huge_pages : min_part_in_small_pages;
}

bool PeerMemory::copy(uint64_t remote_address, void* local, size_t size, bool reads) const {
  const size_t parts = std::clamp<size_t>(size / min_part_bytes(remote_address, size), 1, team_->size());
  const size_t part_bytes = (size + parts - 1) / parts;
  std::atomic<bool> ok{true};
  team_->run(parts, [&](size_t i) {
    const size_t begin = i * part_bytes;
    const size_t length = std::min(part_bytes, size - begin);
    if (!copy_part(pid_, remote_address + begin, static_cast<std::byte*>(local) + begin, length, reads))
      ok = false;
  });
  return ok;
}

bool PeerMemory::copy_rows(const PeerRows& rows, std::byte* local, bool reads) const {
  const size_t count = rows.rows * rows.slices;
  // Rows one after the other, in one slice or in slices one after the other: a single range.
  if (rows.row_pitch == rows.row_bytes && (rows.slices == 1 || rows.slice_pitch == rows.rows * rows.row_pitch))
    return copy(rows.address, local, count * rows.row_bytes, reads);
  const size_t parts =
      std::clamp<size_t>(count * rows.row_bytes / min_part_in_small_pages, 1, std::min(team_->size(), count));
  const size_t rows_per_part = (count + parts - 1) / parts;
  std::atomic<bool> ok{true};
  team_->run(parts, [&](size_t i) {
    const size_t first = i * rows_per_part;
    const size_t part = std::min(rows_per_part, count - std::min(first, count));
    if (part && !copy_rows_part(pid_, rows, first, part, local + first * rows.row_bytes, reads)) ok = false;
  });
  return ok;
}

bool PeerMemory::read_rows(const PeerRows& rows, void* local) const {
  return copy_rows(rows, static_cast<std::byte*>(local), true);
}

bool PeerMemory::write_rows(const PeerRows& rows, const void* local) const {
  return copy_rows(rows, static_cast<std::byte*>(const_cast<void*>(local)), false);
}

bool PeerMemory::read(uint64_t remote_address, void* local, size_t size) const {
  return copy(remote_address, local, size, true);
}

bool PeerMemory::write(uint64_t remote_address, const void* local, size_t size) const {
  return copy(remote_address, const_cast<void*>(local), size, false);
}

}  // namespace hivecl::transport
