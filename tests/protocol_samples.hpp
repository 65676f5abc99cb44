// Sample values for every field type of the message table (test_codec.cpp, the fuzz corpus):
// each field gets a value different from its default, so encodings exercise every field.
#pragma once

#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "protocol/messages.hpp"

namespace hivecl::protocol::samples {

template <class T>
void fill(std::vector<T>& values, int seed);
template <class T, size_t N>
void fill(InlineVector<T, N>& values, int seed);
template <Record T>
void fill(T& record, int seed);

inline void fill(std::string& value, int seed) { value = "text-" + std::to_string(seed); }
inline void fill(bool& value, int) { value = true; }

template <class T>
  requires(std::is_arithmetic_v<T> || std::is_enum_v<T>)
void fill(T& value, int seed) {
  if constexpr (std::is_enum_v<T>) {
    value = static_cast<T>(1);
  } else {
    value = static_cast<T>(seed * 7 + 3);
  }
}

template <class T>
void fill(std::vector<T>& values, int seed) {
  values.resize(3);
  for (auto& value : values) fill(value, seed++);
}

template <class T, size_t N>
void fill(InlineVector<T, N>& values, int seed) {
  values.resize(N);
  for (size_t i = 0; i < N; ++i) fill(values.data()[i], seed++);
}

template <Record T>
void fill(T& record, int seed) {
  std::apply([&](auto&... field) { (fill(field, seed++), ...); }, record.fields());
}

}  // namespace hivecl::protocol::samples
