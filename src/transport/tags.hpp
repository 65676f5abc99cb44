// MPI tags on a client-proxy intercommunicator. Control frames (requests and replies)
// use control_tag; the bulk data of the request with sequence number s uses
// data_tag(s), so chunks of concurrent transfers never match each other's receives,
// and a large transfer never delays the matching of control frames.
#pragma once

#include <cstdint>

namespace hivecl::transport {

inline constexpr int control_tag = 1;
inline constexpr int first_data_tag = 2;
// MPI guarantees tags up to 32767; wrapping there keeps every implementation happy,
// and 32765 transfers in flight on one connection is far beyond what we ever have.
inline constexpr int data_tag_span = 32767 - first_data_tag;

inline int data_tag(uint64_t sequence) { return first_data_tag + static_cast<int>(sequence % data_tag_span); }

}  // namespace hivecl::transport
