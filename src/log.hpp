// One logger for the client library and the proxy. The level comes from the config key
// "log" (env HIVECL_LOG; the proxy's from "proxy_log"): error, warn, info, debug, trace.
// Every line is written whole to stderr as
//   2026-11-23 13:05:01.234 NODE ROLE[PID] session N LEVEL: message
// ("session N" only on a thread working for one session). Nothing on a hot path logs at
// info or above; its lines are debug or trace.
#pragma once

#include <atomic>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace hivecl::log {

enum class Level { error = 0, warn, info, debug, trace };

// Who is logging, shown in every line ("client", "proxy"); set once at start-up.
void set_role(std::string_view role);
void set_level(Level level);
namespace detail {
extern std::atomic<Level> current_level;
}
// Inline, as the check in at(): a line below the level costs a load and a compare where it
// would be written (the proxy traces every request).
inline Level level() { return detail::current_level.load(std::memory_order_relaxed); }
bool parse_level(std::string_view text, Level& out);
void write(Level level, const std::string& message);

// Lines written by this thread while it lives name `session` (a proxy's session worker).
class SessionScope {
 public:
  explicit SessionScope(uint32_t session);
  SessionScope(const SessionScope&) = delete;
  SessionScope& operator=(const SessionScope&) = delete;
  ~SessionScope();

 private:
  uint32_t previous_;
};

// Builds and writes a line, out of line: at() itself stays small enough to inline.
template <class... Parts>
[[gnu::noinline, gnu::cold]] void compose(Level lvl, const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  write(lvl, text.str());
}

template <class... Parts>
void at(Level lvl, const Parts&... parts) {
  if (lvl <= level()) compose(lvl, parts...);
}

template <class... Parts> void error(const Parts&... p) { at(Level::error, p...); }
template <class... Parts> void warn(const Parts&... p) { at(Level::warn, p...); }
template <class... Parts> void info(const Parts&... p) { at(Level::info, p...); }
template <class... Parts> void debug(const Parts&... p) { at(Level::debug, p...); }
template <class... Parts> void trace(const Parts&... p) { at(Level::trace, p...); }

}  // namespace hivecl::log
