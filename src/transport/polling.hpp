// Polling instead of sleeping while an answer is due. Waking a sleeping thread cost 30–200 µs
// on the GPU machine (a virtual machine whose idle vCPUs halt): through a proxy, a round of
// SHOC-style DeviceMemory (four launches and clFinish, 1.4–3 ms) paid six such wake-ups, 5–14%
// of its time. A thread on the path of a call the client waits for polls for it this long
// before sleeping, as a native runtime's clFinish spins.
#pragma once

#include <sched.h>

#include <chrono>

namespace hivecl::transport {

inline constexpr std::chrono::milliseconds longest_busy_poll{20};

// Yields until `done()` or until `limit` has passed; done()'s last answer.
template <class Done>
bool poll_for(Done done, std::chrono::steady_clock::duration limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return done();
    sched_yield();
  }
  return true;
}

}  // namespace hivecl::transport
