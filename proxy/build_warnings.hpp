// NVIDIA's OpenCL compiler keeps `-w` and `-Werror` for every later build of the process once one
// build gave them (docs/FINDINGS.md): in a proxy, one client's `-Werror` would fail every later
// client's build of a source that warns, and one client's `-w` would take `-Werror` from every
// later client. On such a platform the runtime never gets either switch; the proxy does what they
// ask from the build's log: `-w` takes the warnings out of it, `-Werror` fails a build that warned
// (program.cpp's SwitchedBuild, which also keeps such a build out of NVIDIA's compiler cache).
#pragma once

#include <CL/cl.h>

#include <optional>
#include <string>
#include <string_view>

namespace hivecl::proxy {

// Whether the platform of `device` keeps warning switches once given.
bool keeps_warning_switches(cl_device_id device);

// What build options ask of warnings, and the options without those switches.
struct WarningSwitches {
  bool hidden = false;     // -w
  bool as_errors = false;  // -Werror (moot with -w)
  std::string other_options;
};
// Nothing where the options give neither switch.
std::optional<WarningSwitches> warning_switches(std::string_view options);

// Reading a clang-style build log: diagnostics `<kernel>:3:5: warning: ...` with their source and
// caret lines, the notes after them and the `In file included from` lines before them.
// The log without its warnings: what it reads with `-w`.
std::string without_warnings(std::string_view log);
bool has_warnings(std::string_view log);
// The log's diagnostics alone, warnings as errors: what it reads when `-Werror` fails the build.
std::string warnings_as_errors(std::string_view log);

}  // namespace hivecl::proxy
