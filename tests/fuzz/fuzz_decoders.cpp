// libFuzzer target for every decoder of the message table (fuzz_inputs.hpp: the first byte
// picks the type). A decoder must reject bad input without over-reading or allocating more
// than the input describes (ASan, libFuzzer's malloc limit), and what it accepts must
// encode back to the same bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz_inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& types = hivecl::fuzz::decodable_types();
  const auto& type = types[data[0] % types.size()];
  type.decode_and_check({reinterpret_cast<const std::byte*>(data) + 1, size - 1});
  return 0;
}
