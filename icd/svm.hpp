// Shared virtual memory on the client side (svm.cpp): which addresses are SVM allocations.
#pragma once

#include <cstddef>
#include <optional>

#include "icd/objects.hpp"

namespace hivecl::icd {

// An address inside an SVM allocation: the buffer over the allocation, and where the address is.
struct SvmRegion {
  Ref<_cl_mem> buffer;
  size_t offset = 0;
  size_t room = 0;  // bytes from the address to the allocation's end
};

// Whether a device of `context` shares coarse-grained SVM buffers.
bool supports_svm(const _cl_context* context);
// The allocation of `context` that holds `pointer` (or, where `end_too`, ends at it), if any.
std::optional<SvmRegion> find_svm(const _cl_context* context, const void* pointer, bool end_too = false);

}  // namespace hivecl::icd
