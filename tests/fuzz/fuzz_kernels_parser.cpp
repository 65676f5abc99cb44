// libFuzzer target for kernels-parser (what libhivecl reads of clCreateProgramWithSource's
// source and the build's options): any bytes end in an answer, without a crash, a hang or
// runaway memory. The input's first line is the options, the rest the source; a form feed in
// the source starts an embedded header, "fuzz.h" (clCompileProgram's input headers).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hivecl::kernels_parser;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t line_end = input.find('\n');
  const std::string_view options = line_end == std::string_view::npos ? input : input.substr(0, line_end);
  const std::string_view rest = line_end == std::string_view::npos ? std::string_view{} : input.substr(line_end + 1);
  const size_t header_start = rest.find('\f');
  Headers headers;
  if (header_start != std::string_view::npos) headers["fuzz.h"] = std::string(rest.substr(header_start + 1));
  const Program program = parse({std::string(rest.substr(0, header_start))}, options, headers);
  // An uncertain program lists nothing; a certain kernel is found by its name.
  if (!program.certain && !program.kernels.empty()) std::abort();
  for (const Kernel& kernel : program.kernels)
    if (kernel.certain && !program.certain_kernel(kernel.name)) std::abort();
  return 0;
}
