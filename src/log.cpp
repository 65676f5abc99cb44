#include "log.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

#include "node.hpp"

namespace hivecl::log {
namespace {

std::mutex role_mutex;
std::string current_role = "hivecl";
thread_local uint32_t current_session = 0;

constexpr std::array<std::string_view, 5> level_names{"error", "warn", "info", "debug", "trace"};

// Local time with milliseconds: "2026-11-23 13:05:01.234".
std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  const size_t length = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  char with_millis[48];
  std::snprintf(with_millis, sizeof with_millis, "%.*s.%03d", static_cast<int>(length), text, static_cast<int>(millis));
  return with_millis;
}

}  // namespace

void set_role(std::string_view role) {
  std::lock_guard lock(role_mutex);
  current_role = std::string(role);
}

std::atomic<Level> detail::current_level{Level::warn};

void set_level(Level lvl) { detail::current_level = lvl; }

bool parse_level(std::string_view text, Level& out) {
  for (size_t i = 0; i < level_names.size(); ++i) {
    if (text == level_names[i]) {
      out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

SessionScope::SessionScope(uint32_t session) : previous_(current_session) { current_session = session; }
SessionScope::~SessionScope() { current_session = previous_; }

void write(Level lvl, const std::string& message) {
  std::string line = timestamp() + " " + node_name() + " ";
  {
    std::lock_guard lock(role_mutex);
    line += current_role;
  }
  line += "[" + std::to_string(getpid()) + "] ";
  if (current_session != 0) line += "session " + std::to_string(current_session) + " ";
  line += std::string(level_names[static_cast<size_t>(lvl)]) + ": " + message + "\n";
  // One write() per line keeps lines of concurrent threads and processes whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace hivecl::log
