// libFuzzer target for what the proxy reads of a native build (proxy/build_warnings.hpp): the
// input is a build's options or its log, any bytes. The log without warnings and the log of a
// failed -Werror build must hold no warning; the options without switches, neither switch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/build_warnings.hpp"

namespace {

bool has_token(std::string_view options, std::string_view token) {
  for (size_t at = options.find(token); at != std::string_view::npos; at = options.find(token, at + 1)) {
    const bool starts = at == 0 || options[at - 1] == ' ';
    const bool ends = at + token.size() == options.size() || options[at + token.size()] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hivecl::proxy;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (has_warnings(without_warnings(text)) || has_warnings(warnings_as_errors(text))) std::abort();
  if (without_warnings(text).size() > text.size()) std::abort();
  if (const auto switches = warning_switches(text)) {
    if (has_token(switches->other_options, "-w") || has_token(switches->other_options, "-Werror")) std::abort();
  }
  return 0;
}
