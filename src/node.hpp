// The name of this node as HiveCL shows it (records, logs, status): $HIVECL_NODE_NAME, or
// the host name.
#pragma once

#include <string>

namespace hivecl {

const std::string& node_name();

}  // namespace hivecl
