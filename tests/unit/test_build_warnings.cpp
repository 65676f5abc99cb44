// A build without `-w` on a platform that keeps it (proxy/build_warnings.hpp): the options the
// runtime gets, and the log the application reads.
#include <string>

#include "catch.hpp"
#include "proxy/build_warnings.hpp"

using hivecl::proxy::has_warnings;
using hivecl::proxy::warning_switches;
using hivecl::proxy::warnings_as_errors;
using hivecl::proxy::without_warnings;

TEST_CASE("Options without -w or -Werror are left alone", "[build-warnings]") {
  CHECK_FALSE(warning_switches(""));
  CHECK_FALSE(warning_switches("-cl-fast-relaxed-math"));
  CHECK_FALSE(warning_switches("-DW=-w -wx -Werror=all"));
  CHECK_FALSE(warning_switches("-DMESSAGE=\"build with -w or -Werror\""));
}

TEST_CASE("-w and -Werror leave the options, the rest as given", "[build-warnings]") {
  const auto hidden = warning_switches("  -w\t");
  REQUIRE(hidden);
  CHECK(hidden->hidden);
  CHECK_FALSE(hidden->as_errors);
  CHECK(hidden->other_options == "  \t");
  const auto both = warning_switches("-D VALUE=41 -w -cl-mad-enable -Werror -DX=\"a  -w \\\" -Werror\"");
  REQUIRE(both);
  CHECK(both->hidden);
  CHECK(both->as_errors);
  CHECK(both->other_options == "-D VALUE=41  -cl-mad-enable  -DX=\"a  -w \\\" -Werror\"");
  const auto as_errors = warning_switches("-Werror");
  REQUIRE(as_errors);
  CHECK_FALSE(as_errors->hidden);
  CHECK(as_errors->as_errors);
  CHECK(as_errors->other_options.empty());
}

// NVIDIA's log (CUDA 12, H100) for a source with an unknown extension's pragma, built without -w;
// with -w it is the last two lines alone.
const std::string nvidia_log =
    "<kernel>:1:26: warning: unknown OpenCL extension 'made_up_extension' - ignoring\n"
    "#pragma OPENCL EXTENSION made_up_extension : enable\n"
    "                         ^\n"
    "(): Warning: Function dummy_kernel is a kernel, so overriding noinline attribute. The function may be "
    "inlined when called.\n"
    "\n";
// Its log with -Werror, where the build fails.
const std::string nvidia_failed_log =
    "<kernel>:1:26: error: unknown OpenCL extension 'made_up_extension' - ignoring\n"
    "#pragma OPENCL EXTENSION made_up_extension : enable\n"
    "                         ^\n";

TEST_CASE("A warning, its source line and caret leave the log; the compiler's other lines stay",
          "[build-warnings]") {
  CHECK(without_warnings(nvidia_log) ==
        "(): Warning: Function dummy_kernel is a kernel, so overriding noinline attribute. The function may be "
        "inlined when called.\n"
        "\n");
  CHECK(without_warnings("") == "");
  CHECK(has_warnings(nvidia_log));
  CHECK_FALSE(has_warnings(without_warnings(nvidia_log)));
}

TEST_CASE("-Werror's log: the diagnostics alone, warnings as errors", "[build-warnings]") {
  CHECK(warnings_as_errors(nvidia_log) == nvidia_failed_log);
  CHECK_FALSE(has_warnings(nvidia_failed_log));
  CHECK(warnings_as_errors("") == "");
}

TEST_CASE("Errors stay, with their notes; a warning's notes and includes go with it", "[build-warnings]") {
  // The log's parts, each with its body; `redefined` and `unused` are warnings.
  const auto redefined = [](const std::string& kind) {
    return "In file included from <kernel>:2:\n"
           "header.h:3:9: " + kind + ": 'X' macro redefined\n"
           "#define X 2\n"
           "        ^\n"
           "<kernel>:1:9: note: previous definition is here\n"
           "#define X 1\n"
           "        ^\n";
  };
  const std::string undeclared =
      "<kernel>:5:12: error: use of undeclared identifier 'undeclared'\n"
      "  out[0] = undeclared;\n"
      "           ^~~~~~~~~~\n"
      "<kernel>:4:1: note: to match this '{'\n"
      "{\n"
      "^\n";
  const auto unused = [](const std::string& kind) { return "<kernel>:9:3: " + kind + ": unused value\n  x;\n  ^\n"; };
  const std::string summary = "1 error generated.";
  const std::string log = redefined("warning") + undeclared + unused("warning") + summary;
  CHECK(without_warnings(log) == undeclared + summary);
  CHECK(has_warnings(log));
  CHECK(warnings_as_errors(log) == redefined("error") + undeclared + unused("error"));
}

TEST_CASE("A warning without a caret line takes at most two lines with it", "[build-warnings]") {
  CHECK(without_warnings("<kernel>:1:1: warning: a\nsource\nmore\nkept\n") == "kept\n");
  CHECK(without_warnings("warning: not a located diagnostic\n") == "warning: not a located diagnostic\n");
  CHECK(without_warnings("C:1:2: warning: x\n") == "");
}
