// HiveCL's program binaries (CL_PROGRAM_BINARIES): the device's own binary behind a header
// naming its kernels' argument kinds. A device may keep no argument information in a binary
// (NVIDIA), and without it HiveCL could not tell a memory object from a value in clSetKernelArg
// for a program made from that binary. A binary without the header (one the native runtime
// made) is passed to the device as it is.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codec.hpp"

namespace hivecl::protocol {

struct BinaryArgument {
  uint8_t kind = 0;    // kernels_parser::ArgKind
  uint8_t access = 0;  // kernels_parser::Access
  uint64_t size = 0;   // a by-value argument's bytes; 0: not known
  HIVECL_FIELDS(kind, access, size)
};

struct BinaryKernel {
  std::string name;
  std::vector<BinaryArgument> arguments;
  HIVECL_FIELDS(name, arguments)
};

struct BinaryHeader {
  std::vector<BinaryKernel> kernels;
  HIVECL_FIELDS(kernels)
};

// "HiveCLB" and the format's version, then the header's length (4 bytes), the header, the binary.
inline constexpr std::array<char, 8> binary_magic{'H', 'i', 'v', 'e', 'C', 'L', 'B', '1'};

inline Bytes wrap_binary(const BinaryHeader& header, std::span<const std::byte> native) {
  const Bytes encoded = to_bytes(header);
  Bytes out;
  Writer w(out);
  w.raw(binary_magic.data(), binary_magic.size());
  encode(w, static_cast<uint32_t>(encoded.size()));
  w.raw(encoded.data(), encoded.size());
  w.raw(native.data(), native.size());
  return out;
}

struct UnwrappedBinary {
  BinaryHeader header;
  std::span<const std::byte> native;
};

// The header and the device's binary of a HiveCL binary; nothing for any other binary.
inline std::optional<UnwrappedBinary> unwrap_binary(std::span<const std::byte> binary) {
  Reader r(binary);
  std::array<char, binary_magic.size()> magic{};
  uint32_t header_size = 0;
  if (!r.raw(magic.data(), magic.size()) || magic != binary_magic || !decode(r, header_size) ||
      header_size > r.remaining())
    return std::nullopt;
  const size_t header_start = binary.size() - r.remaining();
  UnwrappedBinary unwrapped;
  if (!from_bytes(binary.subspan(header_start, header_size), unwrapped.header)) return std::nullopt;
  unwrapped.native = binary.subspan(header_start + header_size);
  return unwrapped;
}

}  // namespace hivecl::protocol
