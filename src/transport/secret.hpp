// The cluster's optional shared secret (config key secret_file) and the challenge-response
// that proves it on the watchdog connection, before any MPI connection is made: the proxy
// sends a fresh random nonce, the client answers HMAC-SHA256(secret, label || nonce) (nettle),
// and only a right answer gets the token that the client's Hello must present.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "protocol/codec.hpp"

namespace hivecl::transport {

inline constexpr size_t auth_nonce_bytes = 32;
inline constexpr size_t auth_answer_bytes = 32;  // SHA-256

// The secret in `path`: a regular file owned by this user and readable by nobody else,
// not empty (a trailing newline is not part of it). nullopt, with `why`, otherwise.
std::optional<protocol::Bytes> load_secret(const std::string& path, std::string& why);

// The answer to `nonce` for `secret` (an empty secret when none is configured).
protocol::Bytes auth_answer(const protocol::Bytes& secret, const protocol::Bytes& nonce);

// Compares answers in constant time.
bool auth_answer_matches(const protocol::Bytes& expected, const protocol::Bytes& received);

}  // namespace hivecl::transport
