#include "icd/shared_memory.hpp"

#include <atomic>
#include <map>
#include <mutex>

#include "icd/connection.hpp"

namespace hivecl::icd {

namespace {

// Below this a mapping's transfers cost more in round trips than in copies.
constexpr size_t min_shared_bytes = 64u << 10;
// Each segment holds a descriptor here and in the proxy.
constexpr size_t max_segments = 1024;

struct Registered {
  const Connection* connection;
  protocol::SharedRange range;  // offset 0
};

struct Registry {
  std::mutex mutex;
  std::map<const std::byte*, Registered> segments;  // by start address
  std::atomic<uint64_t> next_number{1};
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

std::unique_ptr<SharedShadow> SharedShadow::create(Connection* connection, size_t size, void* at) {
  // In-process too: the executors' wrapping buffer makes the native runtime page-lock the
  // segment, as a native mapping of CL_MEM_ALLOC_HOST_PTR memory would be.
  if (size < min_shared_bytes || !connection->moves_by_memory()) return nullptr;
  Registry& all = registry();
  {
    std::lock_guard lock(all.mutex);
    if (all.segments.size() >= max_segments) return nullptr;
  }
  auto segment = transport::SharedSegment::create(size, "hivecl-host-memory", at);
  if (!segment) return nullptr;
  const uint64_t number = all.next_number++;
  std::lock_guard lock(all.mutex);
  all.segments.emplace(segment->data(), Registered{connection,
                                                   {.segment = number, .fd = segment->fd(), .inode = segment->inode(),
                                                    .segment_size = size}});
  return std::unique_ptr<SharedShadow>(new SharedShadow(connection, number, std::move(segment)));
}

SharedShadow::~SharedShadow() {
  {
    std::lock_guard lock(registry().mutex);
    registry().segments.erase(segment_->data());
  }
  connection_->post<protocol::ForgetSegment>({.segment = number_});
}

protocol::SharedRange shared_range(const Connection* connection, const void* pointer, size_t size) {
  const auto* bytes = static_cast<const std::byte*>(pointer);
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  auto it = all.segments.upper_bound(bytes);
  if (it == all.segments.begin()) return {};
  --it;
  const size_t offset = static_cast<size_t>(bytes - it->first);
  const uint64_t segment_size = it->second.range.segment_size;
  if (it->second.connection != connection || offset > segment_size || size > segment_size - offset) return {};
  protocol::SharedRange range = it->second.range;
  range.offset = offset;
  return range;
}

}  // namespace hivecl::icd
