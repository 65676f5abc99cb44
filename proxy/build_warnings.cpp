#include "proxy/build_warnings.hpp"

#include <array>
#include <cctype>
#include <functional>
#include <vector>

#include "proxy/vendors.hpp"

namespace hivecl::proxy {

namespace {

constexpr std::string_view whitespace = " \t\n\r\f\v";
constexpr std::string_view warning_marker = ": warning: ";

enum class Diagnostic { none, warning, note, other };

// Whether `text` is `NUMBER` or `NUMBER:NUMBER` (a line and a column).
bool is_location(std::string_view text) {
  bool digit_seen = false;
  for (char c : text) {
    if (c == ':' && digit_seen) {
      digit_seen = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit_seen = true;
    } else {
      return false;
    }
  }
  return digit_seen;
}

// The kind of a diagnostic's first line, `FILE:LINE:COLUMN: KIND: message`.
Diagnostic diagnostic_of(std::string_view line) {
  constexpr std::array kinds{std::pair{warning_marker, Diagnostic::warning},
                             std::pair{std::string_view{": note: "}, Diagnostic::note},
                             std::pair{std::string_view{": error: "}, Diagnostic::other},
                             std::pair{std::string_view{": fatal error: "}, Diagnostic::other}};
  for (const auto& [marker, kind] : kinds) {
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    const std::string_view place = line.substr(0, at);
    const size_t file_end = place.find(':');
    if (file_end != std::string_view::npos && is_location(place.substr(file_end + 1))) return kind;
  }
  return Diagnostic::none;
}

// The line under a diagnostic's source line that points into it: blanks, `^` and `~`.
bool is_caret_line(std::string_view line) {
  return line.find('^') != std::string_view::npos && line.find_first_not_of(" \t^~\n") == std::string_view::npos;
}

// What a line of a log belongs to.
enum class Part { warning, other_diagnostic, text };

// Calls `take(line, part)` for every line of `log` (with its newline), in order.
void for_each_line(std::string_view log, const std::function<void(std::string_view, Part)>& take) {
  std::vector<std::string_view> included_from;  // lines that lead to the next diagnostic
  Part part = Part::text;
  size_t body_left = 0;  // the diagnostic's source and caret lines still to come
  const auto take_line = [&](std::string_view line) {
    for (std::string_view leading : included_from) take(leading, part);
    included_from.clear();
    take(line, part);
  };
  for (size_t start = 0; start < log.size();) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string_view line = log.substr(start, std::min(end + 1, log.size()) - start);
    start = end + 1;
    if (line.starts_with("In file included from ")) {
      included_from.push_back(line);
      continue;
    }
    const Diagnostic kind = diagnostic_of(line);
    if (kind == Diagnostic::warning || (kind == Diagnostic::note && part == Part::warning)) {
      part = Part::warning;
    } else if (kind != Diagnostic::none) {
      part = Part::other_diagnostic;
    } else if (body_left == 0) {
      part = Part::text;
    }
    if (kind != Diagnostic::none)
      body_left = 2;
    else if (body_left > 0)
      body_left = is_caret_line(line) ? 0 : body_left - 1;
    take_line(line);
  }
  for (std::string_view leading : included_from) take(leading, Part::text);
}

// The end of the option starting at `start`: blanks end it, but not within double quotes (a
// macro's value, `-DNAME="a b"`), where a backslash escapes the next character.
size_t option_end(std::string_view options, size_t start) {
  bool quoted = false;
  for (size_t at = start; at < options.size(); ++at) {
    const char c = options[at];
    if (quoted && c == '\\') {
      ++at;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && whitespace.find(c) != std::string_view::npos) {
      return at;
    }
  }
  return options.size();
}

}  // namespace

bool keeps_warning_switches(cl_device_id device) {
  return platform_name_of(device).find("NVIDIA") != std::string::npos;
}

std::optional<WarningSwitches> warning_switches(std::string_view options) {
  WarningSwitches switches;
  size_t copied = 0;  // the other options are copied as they are, blanks and all
  for (size_t start = options.find_first_not_of(whitespace); start != std::string_view::npos;) {
    const size_t end = option_end(options, start);
    const std::string_view option = options.substr(start, end - start);
    if (option == "-w" || option == "-Werror") {
      (option == "-w" ? switches.hidden : switches.as_errors) = true;
      switches.other_options.append(options.substr(copied, start - copied));
      copied = end;
    }
    start = options.find_first_not_of(whitespace, end);
  }
  if (!switches.hidden && !switches.as_errors) return std::nullopt;
  switches.other_options.append(options.substr(copied));
  return switches;
}

std::string without_warnings(std::string_view log) {
  std::string kept;
  for_each_line(log, [&](std::string_view line, Part part) {
    if (part != Part::warning) kept += line;
  });
  return kept;
}

bool has_warnings(std::string_view log) {
  bool found = false;
  for_each_line(log, [&](std::string_view, Part part) { found = found || part == Part::warning; });
  return found;
}

std::string warnings_as_errors(std::string_view log) {
  std::string kept;
  for_each_line(log, [&](std::string_view line, Part part) {
    if (part == Part::text) return;
    const size_t marker = line.find(warning_marker);
    if (part == Part::warning && marker != std::string_view::npos && diagnostic_of(line) == Diagnostic::warning) {
      kept.append(line.substr(0, marker)).append(": error: ").append(line.substr(marker + warning_marker.size()));
    } else {
      kept += line;
    }
  });
  return kept;
}

}  // namespace hivecl::proxy
