// The registry of live handles, which lets every entry point tell a handle of ours
// from a released or foreign one before touching it.
#include "icd/objects.hpp"

#include <shared_mutex>
#include <unordered_map>

#include "icd/connection.hpp"

namespace hivecl::icd {

namespace {

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
};

Registry& registry() {
  static Registry* const instance = new Registry;  // outlives every static destructor
  return *instance;
}

}  // namespace

void register_handle(const void* handle, HandleKind kind) {
  std::unique_lock lock(registry().mutex);
  registry().live[handle] = kind;
}

void unregister_handle(const void* handle) {
  std::unique_lock lock(registry().mutex);
  registry().live.erase(handle);
}

bool is_live(const void* handle, HandleKind kind) {
  std::shared_lock lock(registry().mutex);
  const auto it = registry().live.find(handle);
  return it != registry().live.end() && it->second == kind;
}

void release_remote(Connection* connection, protocol::ObjectKind kind, protocol::ObjectId id) {
  connection->post<protocol::Release>({.kind = kind, .id = id});
}

}  // namespace hivecl::icd
