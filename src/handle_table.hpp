// The proxy's table of one session's objects: remote id -> native handle, with its kind.
// Ids come from the client; the table refuses an id that is in use and answers
// "unknown" for an id that is not there or names an object of another kind, so a
// client can only reach its own objects, as what they are.
#pragma once

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/messages.hpp"

namespace hivecl {

class HandleTable {
 public:
  struct Entry {
    protocol::ObjectKind kind;
    void* native;
    uint64_t device_bytes = 0;  // device memory the object holds (buffers)
  };

  // False when `id` is reserved (device ids) or already in use.
  bool insert(protocol::ObjectId id, protocol::ObjectKind kind, void* native, uint64_t device_bytes = 0) {
    if (id < protocol::first_session_id) return false;
    return entries_.emplace(id, Entry{kind, native, device_bytes}).second;
  }
  bool is_free(protocol::ObjectId id) const { return id >= protocol::first_session_id && !entries_.contains(id); }
  // The native handle, or nullptr when `id` is unknown or of another kind.
  void* find(protocol::ObjectId id, protocol::ObjectKind kind) const {
    const auto it = entries_.find(id);
    return it != entries_.end() && it->second.kind == kind ? it->second.native : nullptr;
  }
  std::optional<Entry> erase(protocol::ObjectId id, protocol::ObjectKind kind) {
    const auto it = entries_.find(id);
    if (it == entries_.end() || it->second.kind != kind) return std::nullopt;
    Entry entry = it->second;
    entries_.erase(it);
    return entry;
  }
  // Empties the table, handing back every entry (session teardown).
  std::vector<std::pair<protocol::ObjectId, Entry>> take_all() {
    std::vector<std::pair<protocol::ObjectId, Entry>> all(entries_.begin(), entries_.end());
    entries_.clear();
    return all;
  }
  size_t size() const { return entries_.size(); }

 private:
  std::unordered_map<protocol::ObjectId, Entry> entries_;
};

}  // namespace hivecl
