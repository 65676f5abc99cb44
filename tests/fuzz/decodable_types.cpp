#include <cstdlib>

#include "fuzz_inputs.hpp"
#include "protocol_samples.hpp"

namespace hivecl::fuzz {

namespace {

template <class T>
void decode_and_check(std::span<const std::byte> input) {
  T value{};
  if (!protocol::from_bytes(input, value)) return;
  // The encoding is canonical: what decoded must encode to the same bytes.
  if (protocol::to_bytes(value) != Bytes(input.begin(), input.end())) std::abort();
}

template <class T>
Bytes sample() {
  T value{};
  protocol::samples::fill(value, 1);
  return protocol::to_bytes(value);
}

template <class T>
DecodableType decodable(std::string name) {
  return {std::move(name), &decode_and_check<T>, &sample<T>};
}

}  // namespace

const std::vector<DecodableType>& decodable_types() {
  static const std::vector<DecodableType> types = [] {
    std::vector<DecodableType> all;
    protocol::for_each_message([&]<class M>() {
      all.push_back(decodable<typename M::Request>(std::string(M::message_name) + ".Request"));
      all.push_back(decodable<typename M::Reply>(std::string(M::message_name) + ".Reply"));
    });
    all.push_back(decodable<protocol::FrameHeader>("FrameHeader"));
    all.push_back(decodable<protocol::ProxyRecord>("ProxyRecord"));
    all.push_back(decodable<protocol::KernelOutput>("KernelOutput"));
    return all;
  }();
  return types;
}

}  // namespace hivecl::fuzz
