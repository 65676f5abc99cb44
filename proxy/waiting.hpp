// Whether some client waits for a Finish or WaitForEvents reply from this proxy (counted by
// the session's Replier): the threads its next request passes through (the control channel's
// reader, the session's worker, the queue's waiter) then poll for it instead of sleeping
// (transport/polling.hpp).
#pragma once

namespace hivecl::proxy {

bool clients_waiting();

}  // namespace hivecl::proxy
