// `hivecl-proxy --status [--json]` (and `hivecl-cluster status`): the cluster's proxies,
// their devices, and the live sessions each proxy reports in its status file.
#pragma once

#include <iosfwd>

#include "config.hpp"

namespace hivecl::proxy {

// Prints the status of the cluster of `config` as text or JSON; returns the exit code
// (1 when the cluster has no proxy).
int print_status(const Config& config, bool json, std::ostream& out);

}  // namespace hivecl::proxy
