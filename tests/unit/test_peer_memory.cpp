// The same-node copy path against this very process: process_vm_readv/writev on one's own
// pid needs no permission, so the splitting over a team of threads is checked for real.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "advised_memory.hpp"
#include "catch.hpp"
#include "transport/peer_memory.hpp"

using hivecl::transport::CopyTeam;
using hivecl::transport::PageMap;
using hivecl::transport::PeerMemory;

namespace {

std::vector<unsigned char> pattern(size_t size, unsigned seed) {
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + (i >> 12) + seed);
  return bytes;
}

// The kernel's own account (/proc/self/smaps) of the huge pages in the mapping that holds `address`.
size_t anonymous_huge_bytes(uint64_t address) {
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uint64_t first = 0, end = 0;
    char dash = 0;
    if (std::istringstream range(line); range >> std::hex >> first >> dash >> end && dash == '-') {
      inside = first <= address && address < end;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoull(line.substr(line.find(':') + 1)) * 1024;
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("PageMap tells memory in huge pages from memory in 4 KiB pages", "[peer-memory]") {
  const PageMap pages(::getpid());
  if (!pages.available()) {
    WARN("this kernel has no PAGEMAP_SCAN (Linux 6.7): not run");
    return;
  }
  constexpr size_t bytes = size_t{4} << 20;
  const AdvisedMemory small(bytes, MADV_NOHUGEPAGE);
  CHECK_FALSE(pages.huge(small.address(), bytes));
  const AdvisedMemory huge(bytes, MADV_HUGEPAGE);
  // Granted where transparent huge pages are on (always or madvise), as the kernel's account says.
  CHECK(pages.huge(huge.address(), bytes) == (anonymous_huge_bytes(huge.address()) >= bytes));
  CHECK_FALSE(pages.huge(huge.address(), 0));
  void* untouched = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(untouched != MAP_FAILED);
  CHECK_FALSE(pages.huge(reinterpret_cast<uint64_t>(untouched), bytes));  // absent pages are not huge
  munmap(untouched, bytes);
}

TEST_CASE("PeerMemory copies memory in huge pages in smaller parts, whole", "[peer-memory]") {
  CopyTeam team(8);
  const PeerMemory self(::getpid(), team);
  constexpr size_t bytes = size_t{6} << 20;  // eight parts of 768 KiB in huge pages, six of 1 MiB otherwise
  const AdvisedMemory remote(bytes, MADV_HUGEPAGE);
  // Huge where the kernel granted them (the finer split then runs), as its own account says.
  CHECK(PageMap(::getpid()).huge(remote.address(), bytes) ==
        (PageMap(::getpid()).available() && anonymous_huge_bytes(remote.address()) >= bytes));
  const auto source = pattern(bytes, 9);
  REQUIRE(self.write(remote.address(), source.data(), bytes));
  std::vector<unsigned char> back(bytes);
  REQUIRE(self.read(remote.address(), back.data(), bytes));
  CHECK(back == source);
  CHECK(std::memcmp(remote.data(), source.data(), bytes) == 0);
}

TEST_CASE("PageMap and a huge copy take addresses a client may send without harm", "[peer-memory][bad-input]") {
  const PageMap pages(::getpid());
  constexpr size_t bytes = size_t{6} << 20;
  CHECK_FALSE(pages.huge(UINT64_MAX - 10, bytes));    // wraps around
  CHECK_FALSE(pages.huge(uint64_t{1} << 63, bytes));  // beyond user space
  CopyTeam team(8);
  const PeerMemory self(::getpid(), team);
  std::vector<unsigned char> target(bytes);
  CHECK_FALSE(self.read(8, target.data(), bytes));  // unmapped, split however it is
  CHECK_FALSE(self.read(UINT64_MAX - 10, target.data(), bytes));
}

TEST_CASE("PeerMemory copies whole ranges, split over a team of threads", "[peer-memory]") {
  for (size_t threads : {1, 3}) {
    CopyTeam team(threads);
    const PeerMemory self(::getpid(), team);
    for (size_t size : {size_t{1}, size_t{4096}, (size_t{5} << 20) + 3}) {
      const auto source = pattern(size, static_cast<unsigned>(threads));
      std::vector<unsigned char> target(size);
      REQUIRE(self.read(reinterpret_cast<uint64_t>(source.data()), target.data(), size));
      CHECK(target == source);
      std::vector<unsigned char> written(size);
      REQUIRE(self.write(reinterpret_cast<uint64_t>(written.data()), source.data(), size));
      CHECK(written == source);
    }
  }
}

TEST_CASE("PeerMemory reports memory it cannot reach", "[peer-memory]") {
  CopyTeam team(2);
  const PeerMemory self(::getpid(), team);
  std::vector<unsigned char> target(64);
  CHECK_FALSE(self.read(8, target.data(), target.size()));  // the first page is never mapped
}

TEST_CASE("PeerMemory gathers and scatters rows laid out with pitches", "[peer-memory]") {
  using hivecl::transport::PeerRows;
  for (size_t threads : {1, 3}) {
    CopyTeam team(threads);
    const PeerMemory self(::getpid(), team);
    // 3 slices of 1500 rows of 700 bytes, rows 1000 bytes apart, slices 1.6 MB apart: more rows
    // than one system call takes (IOV_MAX), over several threads.
    constexpr size_t row = 700, rows = 1500, slices = 3, row_pitch = 1000, slice_pitch = 1'600'000;
    const auto remote = pattern(slice_pitch * slices, static_cast<unsigned>(threads));
    const PeerRows box{.address = reinterpret_cast<uint64_t>(remote.data()) + 13, .row_bytes = row, .rows = rows,
                       .slices = slices, .row_pitch = row_pitch, .slice_pitch = slice_pitch};
    std::vector<unsigned char> packed(row * rows * slices), expected;
    for (size_t index = 0; index < rows * slices; ++index) {
      const auto* from = remote.data() + (box.row(index) - reinterpret_cast<uint64_t>(remote.data()));
      expected.insert(expected.end(), from, from + row);
    }
    REQUIRE(self.read_rows(box, packed.data()));
    CHECK(packed == expected);
    std::vector<unsigned char> scattered(remote.size(), 0);
    PeerRows into = box;
    into.address = reinterpret_cast<uint64_t>(scattered.data()) + 13;
    REQUIRE(self.write_rows(into, packed.data()));
    for (size_t index = 0; index < rows * slices; index += 499) {
      const size_t at = into.row(index) - reinterpret_cast<uint64_t>(scattered.data());
      CHECK(std::equal(scattered.begin() + at, scattered.begin() + at + row, packed.begin() + index * row));
      CHECK(scattered[at + row] == 0);  // the bytes between rows stay
    }
  }
}

TEST_CASE("PeerMemory copies rows that lie one after the other as one range, whatever the slice pitch",
          "[peer-memory]") {
  using hivecl::transport::PeerRows;
  CopyTeam team(2);
  const PeerMemory self(::getpid(), team);
  const auto remote = pattern(64 * 1000, 5);
  // One slice of 1000 rows of 64 bytes, rows 64 bytes apart (a piece of a packed box): the
  // slice pitch (here the whole box's, larger) does not matter.
  const PeerRows rows{.address = reinterpret_cast<uint64_t>(remote.data()), .row_bytes = 64, .rows = 1000,
                      .slices = 1, .row_pitch = 64, .slice_pitch = 1 << 20};
  std::vector<unsigned char> packed(remote.size());
  REQUIRE(self.read_rows(rows, packed.data()));
  CHECK(packed == remote);
}

TEST_CASE("PeerMemory reports rows it cannot reach", "[peer-memory]") {
  CopyTeam team(2);
  const PeerMemory self(::getpid(), team);
  std::vector<unsigned char> target(64 * 4);
  const hivecl::transport::PeerRows unmapped{.address = 8, .row_bytes = 64, .rows = 4, .slices = 1,
                                             .row_pitch = 128, .slice_pitch = 512};
  CHECK_FALSE(self.read_rows(unmapped, target.data()));
}

TEST_CASE("the data_path setting accepts auto, mpi, memory and shm only", "[peer-memory]") {
  using hivecl::transport::DataPathChoice;
  DataPathChoice choice{};
  CHECK((hivecl::transport::parse_data_path_choice("shm", choice) && choice == DataPathChoice::memory));
  CHECK((hivecl::transport::parse_data_path_choice("mpi", choice) && choice == DataPathChoice::mpi));
  CHECK((hivecl::transport::parse_data_path_choice("auto", choice) && choice == DataPathChoice::automatic));
  CHECK_FALSE(hivecl::transport::parse_data_path_choice("fast", choice));
}
