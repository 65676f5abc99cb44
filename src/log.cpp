#include "log.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>

namespace hivecl::log {
namespace {

std::atomic<Level> current_level{Level::warn};
std::mutex role_mutex;
std::string current_role = "hivecl";

constexpr std::array<std::string_view, 5> level_names{"error", "warn", "info", "debug", "trace"};

}  // namespace

void set_role(std::string_view role) {
  std::lock_guard lock(role_mutex);
  current_role = std::string(role);
}

void set_level(Level lvl) { current_level = lvl; }
Level level() { return current_level.load(std::memory_order_relaxed); }

bool parse_level(std::string_view text, Level& out) {
  for (size_t i = 0; i < level_names.size(); ++i) {
    if (text == level_names[i]) {
      out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

void write(Level lvl, const std::string& message) {
  std::string line;
  {
    std::lock_guard lock(role_mutex);
    line = current_role;
  }
  line += "[" + std::to_string(getpid()) + "] " + std::string(level_names[static_cast<size_t>(lvl)]) + ": " +
          message + "\n";
  // One write() per line keeps lines of concurrent threads and processes whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace hivecl::log
