// The same-node copy path against this very process: process_vm_readv/writev on one's own
// pid needs no permission, so the splitting over a team of threads is checked for real.
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "transport/peer_memory.hpp"

using hivecl::transport::CopyTeam;
using hivecl::transport::PeerMemory;

namespace {

std::vector<unsigned char> pattern(size_t size, unsigned seed) {
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + (i >> 12) + seed);
  return bytes;
}

}  // namespace

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

TEST_CASE("the data_path setting accepts auto, mpi, memory and shm only", "[peer-memory]") {
  using hivecl::transport::DataPathChoice;
  DataPathChoice choice{};
  CHECK((hivecl::transport::parse_data_path_choice("shm", choice) && choice == DataPathChoice::memory));
  CHECK((hivecl::transport::parse_data_path_choice("mpi", choice) && choice == DataPathChoice::mpi));
  CHECK((hivecl::transport::parse_data_path_choice("auto", choice) && choice == DataPathChoice::automatic));
  CHECK_FALSE(hivecl::transport::parse_data_path_choice("fast", choice));
}
