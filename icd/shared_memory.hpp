// The client side of shared segments (transport/shared_segment.hpp): the host memory of
// mapped buffers and images on a proxy of this node, which that proxy moves to and from the
// device at page-locked speed with no copy, and the lookup that finds such memory under a pointer.
#pragma once

#include <cstddef>
#include <memory>

#include "protocol/messages.hpp"
#include "transport/shared_segment.hpp"

namespace hivecl::icd {

class Connection;

class SharedShadow {
 public:
  // A segment of `size` bytes for memory objects of `connection`'s proxy, at `at` (page-aligned)
  // where given; nullptr where none can be made (or, at `at`, something is mapped there) or it
  // would not pay (small objects, too many segments).
  static std::unique_ptr<SharedShadow> create(Connection* connection, size_t size, void* at = nullptr);
  SharedShadow(const SharedShadow&) = delete;
  SharedShadow& operator=(const SharedShadow&) = delete;
  ~SharedShadow();
  std::byte* data() const { return segment_->data(); }

 private:
  SharedShadow(Connection* connection, uint64_t number, std::unique_ptr<transport::SharedSegment> segment)
      : connection_(connection), number_(number), segment_(std::move(segment)) {}
  Connection* connection_;
  uint64_t number_;
  std::unique_ptr<transport::SharedSegment> segment_;
};

// Where [pointer, pointer + size) lies in a segment of `connection`'s; segment 0 if it does not.
protocol::SharedRange shared_range(const Connection* connection, const void* pointer, size_t size);

}  // namespace hivecl::icd
