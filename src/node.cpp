#include "node.hpp"

#include <unistd.h>

#include <cstdlib>

namespace hivecl {

const std::string& node_name() {
  static const std::string name = [] {
    if (const char* name = std::getenv("HIVECL_NODE_NAME"); name && *name) return std::string(name);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host);
  }();
  return name;
}

}  // namespace hivecl
