// One logger for the client library and the proxy. The level comes from the
// config key "log" (env HIVECL_LOG): error, warn, info, debug, trace.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace hivecl::log {

enum class Level { error = 0, warn, info, debug, trace };

// Who is logging, shown in every line ("client", "proxy"); set once at start-up.
void set_role(std::string_view role);
void set_level(Level level);
Level level();
bool parse_level(std::string_view text, Level& out);
void write(Level level, const std::string& message);

template <class... Parts>
void at(Level lvl, const Parts&... parts) {
  if (lvl > level()) return;
  std::ostringstream text;
  (text << ... << parts);
  write(lvl, text.str());
}

template <class... Parts> void error(const Parts&... p) { at(Level::error, p...); }
template <class... Parts> void warn(const Parts&... p) { at(Level::warn, p...); }
template <class... Parts> void info(const Parts&... p) { at(Level::info, p...); }
template <class... Parts> void debug(const Parts&... p) { at(Level::debug, p...); }
template <class... Parts> void trace(const Parts&... p) { at(Level::trace, p...); }

}  // namespace hivecl::log
