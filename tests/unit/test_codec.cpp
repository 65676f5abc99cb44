// The wire codec: every message of the table round-trips, and no malformed input is accepted.
#include <type_traits>

#include "catch.hpp"
#include "protocol/messages.hpp"
#include "protocol/program_binary.hpp"
#include "protocol_samples.hpp"

using namespace hivecl::protocol;
using hivecl::protocol::samples::fill;

namespace {

template <class T>
void check_round_trip_and_rejections(const T& original) {
  const Bytes bytes = to_bytes(original);
  T decoded{};
  REQUIRE(from_bytes(bytes, decoded));
  CHECK(decoded == original);
  // Every truncation is rejected.
  for (size_t length = 0; length < bytes.size(); ++length) {
    T partial{};
    CHECK_FALSE(from_bytes({bytes.data(), length}, partial));
  }
  // Trailing bytes are rejected.
  Bytes longer = bytes;
  longer.push_back(std::byte{0});
  T extended{};
  CHECK_FALSE(from_bytes(longer, extended));
}

}  // namespace

TEST_CASE("every request and reply of the message table round-trips and rejects bad input", "[codec]") {
  int messages = 0;
  for_each_message([&]<class M>() {
    INFO("message " << M::message_name);
    typename M::Request request{};
    fill(request, 1);
    check_round_trip_and_rejections(request);
    typename M::Reply reply{};
    fill(reply, 2);
    check_round_trip_and_rejections(reply);
    ++messages;
  });
  CHECK(messages == static_cast<int>(Opcode::count));
}

TEST_CASE("frame headers and rendezvous records round-trip", "[codec]") {
  FrameHeader header{.opcode = Opcode::ReadBuffer, .kind = FrameKind::reply, .sequence = 1234, .status = -5};
  check_round_trip_and_rejections(header);
  ProxyRecord record;
  fill(record, 5);
  check_round_trip_and_rejections(record);
}

TEST_CASE("a forged count cannot make the decoder allocate or over-read", "[codec]") {
  // A vector of 2^32-1 eight-byte elements announced in 4 bytes.
  Bytes forged = to_bytes(uint32_t{0xFFFFFFFF});
  std::vector<uint64_t> values;
  CHECK_FALSE(from_bytes(forged, values));
  std::string text;
  CHECK_FALSE(from_bytes(forged, text));
  std::vector<std::string> strings;
  CHECK_FALSE(from_bytes(forged, strings));
}

TEST_CASE("work sizes travel as a vector and refuse more than three", "[codec]") {
  const std::vector<uint64_t> three{7, 8, 9};
  WorkSizes sizes;
  REQUIRE(from_bytes(to_bytes(three), sizes));
  CHECK(sizes == WorkSizes{7, 8, 9});
  CHECK(to_bytes(sizes) == to_bytes(three));
  CHECK_FALSE(from_bytes(to_bytes(std::vector<uint64_t>{1, 2, 3, 4}), sizes));
  CHECK(WorkSizes(static_cast<const size_t*>(nullptr), 3).empty());
}

TEST_CASE("a boolean other than 0 or 1 is rejected", "[codec]") {
  Bytes bytes{std::byte{2}};
  bool value = false;
  CHECK_FALSE(from_bytes(bytes, value));
}

TEST_CASE("opcodes outside the table are unknown to the dispatcher", "[codec]") {
  bool visited = false;
  CHECK_FALSE(visit_opcode(Opcode::count, [&]<class M>() { visited = true; }));
  CHECK_FALSE(visited);
  CHECK(visit_opcode(Opcode::Hello, [&]<class M>() { visited = std::is_same_v<M, Hello>; }));
  CHECK(visited);
}

TEST_CASE("a HiveCL program binary unwraps to its header and the device's binary; others do not", "[codec]") {
  const BinaryHeader header{.kernels = {{.name = "k", .arguments = {{.kind = 0}, {.kind = 6, .size = 8}}}}};
  const Bytes native{std::byte{1}, std::byte{2}, std::byte{3}};
  const Bytes wrapped = wrap_binary(header, native);
  const auto unwrapped = unwrap_binary(wrapped);
  REQUIRE(unwrapped);
  CHECK(unwrapped->header == header);
  CHECK(Bytes(unwrapped->native.begin(), unwrapped->native.end()) == native);
  CHECK_FALSE(unwrap_binary(native));  // a native binary is passed on as it is
  for (size_t length = 0; length < wrapped.size() - native.size(); ++length)
    CHECK_FALSE(unwrap_binary(std::span(wrapped).first(length)));  // a truncated header
  Bytes forged = wrapped;
  forged[binary_magic.size()] = std::byte{0xff};  // a header longer than the binary
  CHECK_FALSE(unwrap_binary(forged));
}
