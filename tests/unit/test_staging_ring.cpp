// The order in which the staging ring hands out its free slots (proxy/staging.hpp): the device
// gets the one released longest ago, the host the one released last.
#include "catch.hpp"
#include "proxy/staging.hpp"

using hivecl::proxy::StagingRing;
using Filler = StagingRing::Filler;

TEST_CASE("The staging ring gives the device the slot released longest ago and the host the one released last",
          "[staging]") {
  constexpr size_t slot_bytes = 4096;
  StagingRing ring(nullptr, nullptr, 3, slot_bytes);  // no context: ordinary memory
  const StagingRing::Slot first = ring.acquire(Filler::host);
  const StagingRing::Slot second = ring.acquire(Filler::host);
  const StagingRing::Slot third = ring.acquire(Filler::host);
  StagingRing::Slot none{};
  CHECK_FALSE(ring.try_acquire(Filler::device, none));
  const std::byte* base = first.data - first.index * slot_bytes;
  for (const auto* slot : {&first, &second, &third}) {
    CHECK(slot->index < 3);
    CHECK_FALSE(slot->overflow);
    CHECK(slot->data == base + slot->index * slot_bytes);
  }
  CHECK(first.index != second.index);
  CHECK(second.index != third.index);
  CHECK(first.index != third.index);
  ring.release(second);
  ring.release(first);
  ring.release(third);

  const StagingRing::Slot oldest = ring.acquire(Filler::device);
  CHECK(oldest.index == second.index);
  StagingRing::Slot for_host{};
  REQUIRE(ring.try_acquire(Filler::host, for_host));
  CHECK(for_host.index == third.index);
  StagingRing::Slot for_device{};
  REQUIRE(ring.try_acquire(Filler::device, for_device));
  CHECK(for_device.index == first.index);

  ring.release(for_host);
  ring.release(for_device);
  ring.release(oldest);
  CHECK(ring.wait_idle(std::chrono::milliseconds(0)));
}
