// Launch sizes no device can run, refused on both sides: PoCL 3.1 aborts (pthread_scheduler.c,
// "max_wgs > 0") on a launch whose number of work-items passes 2^64, e.g. 2^32 x 2^32. It also
// counts work-groups in 32 bits (the proxy refuses such launches to PoCL devices: kernel.cpp).
#pragma once

#include <cstdint>

namespace hivecl {

template <class Size>
bool work_items_overflow(const Size* global_size, uint32_t work_dim) {
  uint64_t items = 1;
  for (uint32_t i = 0; i < work_dim; ++i)
    if (__builtin_mul_overflow(items, static_cast<uint64_t>(global_size[i]), &items)) return true;
  return false;
}

// A launch's number of work-groups, or of work-items where `local_size` is null (the runtime
// then picks the groups, possibly of one item each); at most UINT64_MAX.
template <class Size>
uint64_t work_groups_at_most(const Size* global_size, const Size* local_size, uint32_t work_dim) {
  uint64_t groups = 1;
  for (uint32_t i = 0; i < work_dim; ++i) {
    const uint64_t local = local_size && local_size[i] ? static_cast<uint64_t>(local_size[i]) : 1;
    const uint64_t global = static_cast<uint64_t>(global_size[i]);
    if (__builtin_mul_overflow(groups, global / local + (global % local != 0), &groups)) return UINT64_MAX;
  }
  return groups;
}

}  // namespace hivecl
