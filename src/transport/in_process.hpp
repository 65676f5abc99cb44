// The in-process transport: libhivecl serves the devices of its own node with the proxy's
// session, handle table and executors loaded into the application (libhivecl-local.so, built
// from proxy/in_process.cpp and the proxy library), without MPI. Requests and replies are the
// message table's structures, passed in memory without encoding (both sides are built from the
// same table), and a request runs in the calling thread through the proxy's dispatcher; bulk
// data is not copied: the executors hand the application's own pointers to the native runtime.
// The executors live in a library of their own because their cl* calls must reach the native
// runtime, never libhivecl's own cl* entry points (which it binds to itself, -Bsymbolic).
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "config.hpp"
#include "protocol/messages.hpp"

namespace hivecl::transport {

// Where the in-process session's answers go (libhivecl's connection).
class InProcessClient {
 public:
  // The reply to request `sequence` of message `opcode`: in the calling thread, or later in a
  // native callback thread. `reply` is that message's Reply (when `status` is CL_SUCCESS,
  // else null), valid during the call only.
  virtual void on_reply(protocol::Opcode opcode, uint64_t sequence, cl_int status, const void* reply) = 0;
  // The status that ends request `sequence`'s data (reads, and in-process writes).
  virtual void on_status(uint64_t sequence, cl_int status) = 0;

 protected:
  ~InProcessClient() = default;
};

class InProcessBackend {
 public:
  virtual ~InProcessBackend() = default;
  // The devices found, described as a proxy's record describes its own (ids 1..n).
  virtual const std::vector<protocol::DeviceRecord>& devices() const = 0;
  // Opens the process's one session; its answers go to `client`.
  virtual void open(InProcessClient& client) = 0;
  // Runs request `sequence` in the calling thread: `request` is message `opcode`'s Request,
  // `bulk` the data it carries.
  // The session is never torn down: it ends with the process, whose native objects end with
  // it as in a native program (releasing them from an exit handler would run after the native
  // runtime's own static destructors: PoCL asserts then).
  virtual void run(protocol::Opcode opcode, uint64_t sequence, const void* request,
                   std::span<const std::byte> bulk) = 0;
};

// libhivecl-local.so's one exported function: the backend for the devices of the vendor
// libraries the configuration names, or null when there are none. `own_icd_entry` is the
// caller's clIcdGetPlatformIDsKHR: a library exporting it is HiveCL itself and is skipped.
inline constexpr const char* in_process_entry_name = "hivecl_in_process_backend";
using InProcessEntry = InProcessBackend* (*)(const Config& config, const void* own_icd_entry);

}  // namespace hivecl::transport
