// Launch sizes no device can run, refused on both sides: PoCL 3.1 aborts (pthread_scheduler.c,
// "max_wgs > 0") on a launch whose number of work-items passes 2^64, e.g. 2^32 x 2^32.
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

}  // namespace hivecl
