// Open MPI settings HiveCL needs, applied before MPI_Init (through the environment, unless
// the user set them). Both the client library and the proxy use them.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hivecl::transport {

// A peer that dies in the middle of a message must not take the sender with it. Open MPI
// 4.1's ob1 PML aborts the sending process when a fragment to a dead peer fails
// (pml_ob1_sendreq.c, "FATAL"): a killed client took its proxy down, and a killed proxy
// would take the application down. Its UCX PML returns an error instead (tests/fault, 40
// runs each). UCX over any transport, TCP included, is therefore the first choice, and ob1
// the fallback where Open MPI has no UCX; both sides of a connection must choose alike.
// With ob1, the TCP BTL must not use its put protocol, which deadlocks on a dead peer (the
// progress thread re-locks an endpoint's mutex while closing it).
struct MpiDefault {
  const char* variable;
  const char* value;
};
inline constexpr MpiDefault mpi_defaults[] = {
    {"OMPI_MCA_pml", "ucx,ob1"},
    {"OMPI_MCA_pml_ucx_tls", "any"},
    {"OMPI_MCA_btl_tcp_flags", "send,inplace,need-ack,need-csum"},
};

// Everything a process that mpirun did not start (libhivecl in an application, and programs
// that connect like it) sets before MPI_Init to join the cluster whose ompi-server wrote
// `server_uri_path`, as (variable, value): ompi-server's address (ENVIRONMENT.md), no OpenCL in
// hwloc (MPI_Init runs hwloc here and in the daemon it forks, and hwloc's OpenCL plugin would
// load HiveCL again inside them: in orted it then started MPI there and crashed it), and
// mpi_defaults.
inline std::vector<std::pair<std::string, std::string>> standalone_mpi_settings(const std::string& server_uri_path) {
  std::vector<std::pair<std::string, std::string>> settings{{"OMPI_MCA_pmix_server_uri", "file:" + server_uri_path},
                                                            {"HWLOC_COMPONENTS", "-opencl"}};
  for (const auto& [variable, value] : mpi_defaults) settings.emplace_back(variable, value);
  return settings;
}

// Sets an environment variable unless the user did; for as long as this object lives, so that
// settings meant for MPI_Init do not reach the application's own child processes.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name), set_(std::getenv(name) == nullptr) {
    if (set_) ::setenv(name, value.c_str(), 1);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ~ScopedEnvironment() {
    if (set_) ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool set_;
};

}  // namespace hivecl::transport
