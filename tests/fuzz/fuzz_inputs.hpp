// The input formats of the fuzz targets, shared by the targets and the corpus generator.
//
// fuzz-decoders: one selector byte, then the bytes to decode. The selector picks a type
// from decodable_types(), which is generated from the message table: the request and the
// reply of every message, then the frame header and the rendezvous record.
//
// fuzz-session: a sequence of control frames (header and request, as a client sends them),
// each preceded by its length as a 16-bit little-endian count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/messages.hpp"

namespace hivecl::fuzz {

using protocol::Bytes;

struct DecodableType {
  std::string name;
  // Decodes `input`; on success re-encodes the value and aborts unless the bytes are the same.
  void (*decode_and_check)(std::span<const std::byte> input);
  // A valid encoding of a sample value (protocol_samples.hpp), for the corpus.
  Bytes (*sample)();
};

const std::vector<DecodableType>& decodable_types();

// A control frame as a client sends it.
template <class M>
Bytes encode_frame(uint64_t sequence, const typename M::Request& request) {
  Bytes frame = protocol::to_bytes(protocol::FrameHeader{.opcode = M::opcode, .sequence = sequence});
  const Bytes body = protocol::to_bytes(request);
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

// Appends one frame, its length first, to a fuzz-session input.
template <class M>
void append_frame(Bytes& input, uint64_t sequence, const typename M::Request& request) {
  const Bytes frame = encode_frame<M>(sequence, request);
  const auto length = static_cast<uint16_t>(frame.size());
  input.push_back(static_cast<std::byte>(length & 0xFF));
  input.push_back(static_cast<std::byte>(length >> 8));
  input.insert(input.end(), frame.begin(), frame.end());
}

// Splits a fuzz-session input into frames; a truncated last frame is dropped.
inline std::vector<Bytes> split_frames(std::span<const std::byte> input) {
  std::vector<Bytes> frames;
  size_t position = 0;
  while (input.size() - position >= 2) {
    const size_t length = static_cast<size_t>(input[position]) | static_cast<size_t>(input[position + 1]) << 8;
    position += 2;
    if (length > input.size() - position) break;
    frames.emplace_back(input.begin() + position, input.begin() + position + length);
    position += length;
  }
  return frames;
}

}  // namespace hivecl::fuzz
