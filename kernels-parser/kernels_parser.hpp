// kernels-parser: reads OpenCL C source as given to clCreateProgramWithSource (its strings and
// the build options' -D/-I) and tells, per kernel, what each argument is: a memory object, local
// memory, an image, a sampler, a pipe or a value (with its size where that is certain). It never
// guesses: whatever it cannot be sure of (an #include it cannot read, a conditional on a macro the
// device compiler may predefine, a type hidden behind an unknown macro, invalid signatures) makes
// the answer uncertain, with the reason, and the caller must ask the device instead.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hivecl::kernels_parser {

// Header sources by include name (clCompileProgram's input headers).
using Headers = std::map<std::string, std::string>;

enum class ArgKind : uint8_t { global_memory, constant_memory, local_memory, image, sampler, pipe, by_value };

enum class Access : uint8_t { none, read_only, write_only, read_write };

struct Argument {
  ArgKind kind = ArgKind::by_value;
  std::string name;
  std::string type_name;        // as clGetKernelArgInfo's CL_KERNEL_ARG_TYPE_NAME spells it
  Access access = Access::none;  // images and pipes
  std::optional<uint64_t> size;  // by_value: bytes, when certain
};

struct Kernel {
  std::string name;
  std::vector<Argument> arguments;
  bool certain = true;
  std::string uncertainty;  // why not, when not certain
};

struct Program {
  std::vector<Kernel> kernels;  // none when the program is uncertain: reading stops there
  bool certain = true;      // the whole source was understood: every kernel is listed
  std::string uncertainty;  // why not, when not certain

  // The kernel of that name if the answer for it is certain.
  const Kernel* certain_kernel(std::string_view name) const;
};

// `sources`: the strings of clCreateProgramWithSource, concatenated as OpenCL does.
// `options`: clBuildProgram's options; -D and -I are honoured, the others ignored.
// `headers`: clCompileProgram's input headers (source by include name), found before -I.
Program parse(const std::vector<std::string>& sources, std::string_view options, Headers headers = {});
Program parse(std::string_view source, std::string_view options = {});

}  // namespace hivecl::kernels_parser
