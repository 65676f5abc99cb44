// Encoding of wire messages. A message is a struct that lists its fields once
// with HIVECL_FIELDS(...); the same list drives encoding and decoding on both
// sides. Integers are little-endian with fixed width, strings and vectors carry
// a 32-bit count. Decoding never reads past its input and never allocates more
// than the input could describe: truncated, oversized or trailing input fails.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");

#define HIVECL_FIELDS(...)                                      \
  auto fields() { return std::tie(__VA_ARGS__); }               \
  auto fields() const { return std::tie(__VA_ARGS__); }         \
  bool operator==(const auto& other) const { return fields() == other.fields(); }

namespace hivecl::protocol {

using Bytes = std::vector<std::byte>;

template <class T>
concept Scalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

template <class T>
concept Record = requires(T& value) { value.fields(); };

class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}
  // Grows then copies: GCC 12 and 13 report a false stringop-overflow for vector::insert of
  // a few bytes here once inlined (release builds).
  void raw(const void* data, size_t size) {
    if (size == 0) return;
    const size_t at = out_.size();
    out_.resize(at + size);
    std::memcpy(out_.data() + at, data, size);
  }

 private:
  Bytes& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  bool raw(void* data, size_t size) {
    if (failed_ || size > remaining()) return fail();
    if (size == 0) return true;  // an empty vector's data() may be null
    std::memcpy(data, in_.data() + position_, size);
    position_ += size;
    return true;
  }
  size_t remaining() const { return in_.size() - position_; }
  bool fail() { failed_ = true; return false; }
  bool ok() const { return !failed_; }
  bool at_end() const { return !failed_ && remaining() == 0; }

 private:
  std::span<const std::byte> in_;
  size_t position_ = 0;
  bool failed_ = false;
};

// A vector of at most N scalars held in place, for small fixed-bound lists that every call
// carries (a launch's work sizes): making one allocates nothing. On the wire it is a vector;
// more than N elements fail to decode.
template <Scalar T, size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(std::initializer_list<T> values) : InlineVector(values.begin(), values.size()) {}
  // `values` may be null: an empty vector.
  InlineVector(const auto* values, size_t count) {
    if (!values) return;
    if (count > N) throw std::length_error("InlineVector");
    for (size_t i = 0; i < count; ++i) values_[i] = static_cast<T>(values[i]);
    size_ = count;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T* data() const { return values_.data(); }
  T* data() { return values_.data(); }
  const T& operator[](size_t i) const { return values_[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  // For decoding: false past N.
  bool resize(size_t count) {
    if (count > N) return false;
    size_ = count;
    return true;
  }
  bool operator==(const InlineVector& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin());
  }

 private:
  std::array<T, N> values_{};
  size_t size_ = 0;
};

template <Scalar T> void encode(Writer& w, const T& value);
inline void encode(Writer& w, const std::string& value);
template <class T> void encode(Writer& w, const std::vector<T>& values);
template <Record T> void encode(Writer& w, const T& record);
template <Scalar T, size_t N> void encode(Writer& w, const InlineVector<T, N>& values);

template <Scalar T> bool decode(Reader& r, T& value);
inline bool decode(Reader& r, std::string& value);
template <class T> bool decode(Reader& r, std::vector<T>& values);
template <Record T> bool decode(Reader& r, T& record);
template <Scalar T, size_t N> bool decode(Reader& r, InlineVector<T, N>& values);

template <Scalar T>
void encode(Writer& w, const T& value) {
  w.raw(&value, sizeof value);
}

inline void encode_count(Writer& w, size_t count) { encode(w, static_cast<uint32_t>(count)); }

inline void encode(Writer& w, const std::string& value) {
  encode_count(w, value.size());
  w.raw(value.data(), value.size());
}

template <class T>
void encode(Writer& w, const std::vector<T>& values) {
  encode_count(w, values.size());
  if constexpr (Scalar<T>) {
    w.raw(values.data(), values.size() * sizeof(T));
  } else {
    for (const auto& value : values) encode(w, value);
  }
}

template <Scalar T, size_t N>
void encode(Writer& w, const InlineVector<T, N>& values) {
  encode_count(w, values.size());
  w.raw(values.data(), values.size() * sizeof(T));
}

template <Record T>
void encode(Writer& w, const T& record) {
  std::apply([&w](const auto&... field) { (encode(w, field), ...); }, record.fields());
}

template <Scalar T>
bool decode(Reader& r, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t byte = 0;
    if (!r.raw(&byte, 1) || byte > 1) return r.fail();
    value = byte != 0;
    return true;
  } else {
    return r.raw(&value, sizeof value);
  }
}

// Reads a count and checks that the input still holds at least count * min_size bytes,
// so a forged count cannot make the decoder allocate.
inline bool decode_count(Reader& r, size_t min_size, size_t& count) {
  uint32_t wire_count = 0;
  if (!decode(r, wire_count)) return false;
  if (static_cast<uint64_t>(wire_count) * min_size > r.remaining()) return r.fail();
  count = wire_count;
  return true;
}

inline bool decode(Reader& r, std::string& value) {
  size_t count = 0;
  if (!decode_count(r, 1, count)) return false;
  value.resize(count);
  return r.raw(value.data(), count);
}

template <class T>
bool decode(Reader& r, std::vector<T>& values) {
  size_t count = 0;
  if (!decode_count(r, Scalar<T> ? sizeof(T) : 1, count)) return false;
  values.clear();
  if constexpr (Scalar<T> && !std::is_same_v<T, bool>) {
    values.resize(count);
    return r.raw(values.data(), count * sizeof(T));
  } else {
    values.resize(count);
    for (auto& value : values)
      if (!decode(r, value)) return false;
    return true;
  }
}

template <Scalar T, size_t N>
bool decode(Reader& r, InlineVector<T, N>& values) {
  static_assert(!std::is_same_v<T, bool>, "bools are decoded one by one (vector<bool>)");
  size_t count = 0;
  if (!decode_count(r, sizeof(T), count)) return false;
  if (!values.resize(count)) return r.fail();
  return r.raw(values.data(), count * sizeof(T));
}

template <Record T>
bool decode(Reader& r, T& record) {
  return std::apply([&r](auto&... field) { return (decode(r, field) && ...); }, record.fields());
}

// Whole-message helpers: the input must be consumed exactly.
template <class T>
Bytes to_bytes(const T& value) {
  Bytes out;
  Writer w(out);
  encode(w, value);
  return out;
}

template <class T>
bool from_bytes(std::span<const std::byte> in, T& value) {
  Reader r(in);
  return decode(r, value) && r.at_end();
}

}  // namespace hivecl::protocol
