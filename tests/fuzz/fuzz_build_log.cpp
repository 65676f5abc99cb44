// libFuzzer target for what the proxy reads of a native build (proxy/build_warnings.hpp): the
// input is a build's options or its log, any bytes. The log without warnings and the log of a
// failed -Werror build must hold no warning; the options without switches, neither switch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/build_warnings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hivecl::proxy;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (has_warnings(without_warnings(text)) || has_warnings(warnings_as_errors(text))) std::abort();
  if (without_warnings(text).size() > text.size()) std::abort();
  if (const auto switches = warning_switches(text)) {
    if (warning_switches(switches->other_options)) std::abort();
  }
  return 0;
}
