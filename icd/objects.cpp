// The registry of live handles, which lets every entry point tell a handle of ours
// from a released or foreign one before touching it.
#include "icd/objects.hpp"

#include <array>
#include <atomic>
#include <shared_mutex>
#include <unordered_map>

#include "icd/connection.hpp"

namespace hivecl::icd {

namespace {

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
  // Counts the handles that left `live`, each counted before it goes: while the count stays
  // as a thread read it, every handle the thread found live since is live still.
  std::atomic<uint64_t> removals{0};
};

Registry& registry() {
  static Registry* const instance = new Registry;  // outlives every static destructor
  return *instance;
}

// A thread's last few handles found live (an enqueue checks a queue and a memory object or a
// kernel), valid while the registry's removals stay at `removals`: a check of one of them
// then takes no lock, whose two locked instructions an in-process enqueue would pay twice.
struct RecentlyLive {
  static constexpr size_t capacity = 4;
  uint64_t removals = 0;
  std::array<std::pair<const void*, HandleKind>, capacity> handles{};
  size_t next = 0;
};
thread_local RecentlyLive recently_live;

}  // namespace

void register_handle(const void* handle, HandleKind kind) {
  std::unique_lock lock(registry().mutex);
  registry().live[handle] = kind;
}

void unregister_handle(const void* handle) {
  std::unique_lock lock(registry().mutex);
  registry().removals.fetch_add(1, std::memory_order_release);
  registry().live.erase(handle);
}

bool is_live(const void* handle, HandleKind kind) {
  const uint64_t removals = registry().removals.load(std::memory_order_acquire);
  RecentlyLive& recent = recently_live;
  if (recent.removals == removals) {
    for (const auto& [known, known_kind] : recent.handles)
      if (handle && known == handle && known_kind == kind) return true;
  } else {
    recent = RecentlyLive{.removals = removals};
  }
  {
    std::shared_lock lock(registry().mutex);
    const auto it = registry().live.find(handle);
    if (it == registry().live.end() || it->second != kind) return false;
  }
  recent.handles[recent.next++ % RecentlyLive::capacity] = {handle, kind};
  return true;
}

void release_remote(Connection* connection, protocol::ObjectKind kind, protocol::ObjectId id) {
  connection->post<protocol::Release>({.kind = kind, .id = id});
}

}  // namespace hivecl::icd
