// The declaration-level half of kernels-parser: after preprocessing, it follows typedefs and
// struct/union/enum definitions (with OpenCL C's sizes and alignments) and reads each kernel
// definition's parameters.
#pragma once

#include <vector>

#include "kernels_parser.hpp"
#include "preprocessor.hpp"

namespace hivecl::kernels_parser {

// The kernels defined in `tokens`; an invalid or unclear signature makes its kernel uncertain.
std::vector<Kernel> find_kernels(const std::vector<Token>& tokens, Preprocessor& preprocessor);

}  // namespace hivecl::kernels_parser
