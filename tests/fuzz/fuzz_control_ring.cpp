// libFuzzer target for the reading end of a shared-memory control ring
// (transport/control_channel.hpp): the input is the ring's memory as a hostile peer left it
// (its counts, length prefixes and bytes). Reading (read(), or peek() and skip()) must end in
// frames, "broken" or "closed", never read or write outside the ring nor allocate more than the
// frame limit.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/control_channel.hpp"

using hivecl::transport::ControlRing;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t capacity = 4096;
  constexpr uint64_t max_frame = 1u << 20;
  alignas(64) static std::byte memory[ControlRing::header_bytes + capacity];
  std::memset(memory, 0, sizeof memory);
  std::memcpy(memory, data, std::min(size, sizeof memory));
  ControlRing ring(memory, capacity);
  // Closed: a read returns once nothing more is readable instead of waiting for the peer.
  const std::atomic<bool> closed{true};
  hivecl::protocol::Bytes frame;
  // Frames are taken in turn by read() and, as another thread of the consumer does, peek() and skip().
  for (int frames = 0; frames < 64; ++frames) {
    if (frames % 2 == 1) {
      const ControlRing::Peeked peeked = ring.peek(frame, max_frame);
      if (peeked == ControlRing::Peeked::broken) break;
      if (peeked == ControlRing::Peeked::frame) {
        ring.skip(frame.size());
        continue;
      }
    }
    if (ring.read(frame, max_frame, std::chrono::microseconds(0), closed) != ControlRing::Result::done) break;
  }
  return 0;
}
