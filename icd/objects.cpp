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

constexpr size_t handle_kinds = static_cast<size_t>(HandleKind::sampler) + 1;

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
  // Counts, per kind, the handles that left `live`, each before it goes: while its kind's count
  // stays as it was when a thread found a handle live, that handle is live still.
  std::array<std::atomic<uint64_t>, handle_kinds> removals{};
};

Registry& registry() {
  static Registry* const instance = new Registry;  // outlives every static destructor
  return *instance;
}

std::atomic<uint64_t>& removals_of(HandleKind kind) { return registry().removals[static_cast<size_t>(kind)]; }

// A thread's last handles of each kind found live (an enqueue checks a queue and a memory
// object or a kernel), each with its kind's removals then: a check of one of them takes no
// lock, whose two locked instructions an in-process enqueue paid twice. Per kind, so that the
// events an application makes and releases all the time leave its queues and buffers known.
struct RecentlyLive {
  struct Handle {
    const void* handle = nullptr;
    uint64_t removals = 0;
  };
  struct OfKind {
    std::array<Handle, 2> handles{};
    uint8_t next = 0;
  };
  std::array<OfKind, handle_kinds> kinds{};
};
thread_local RecentlyLive recently_live;

}  // namespace

void register_handle(const void* handle, HandleKind kind) {
  std::unique_lock lock(registry().mutex);
  registry().live[handle] = kind;
}

void unregister_handle(const void* handle) {
  std::unique_lock lock(registry().mutex);
  const auto it = registry().live.find(handle);
  if (it == registry().live.end()) return;
  removals_of(it->second).fetch_add(1, std::memory_order_release);
  registry().live.erase(it);
}

bool is_live(const void* handle, HandleKind kind) {
  if (!handle) return false;
  const uint64_t removals = removals_of(kind).load(std::memory_order_acquire);
  RecentlyLive::OfKind& recent = recently_live.kinds[static_cast<size_t>(kind)];
  for (const RecentlyLive::Handle& known : recent.handles)
    if (known.handle == handle && known.removals == removals) return true;
  {
    std::shared_lock lock(registry().mutex);
    const auto it = registry().live.find(handle);
    if (it == registry().live.end() || it->second != kind) return false;
  }
  recent.handles[recent.next++ % recent.handles.size()] = {handle, removals};
  return true;
}

void release_remote(Connection* connection, protocol::ObjectKind kind, protocol::ObjectId id) {
  connection->post<protocol::Release>({.kind = kind, .id = id});
}

}  // namespace hivecl::icd
