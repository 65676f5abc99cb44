// Open MPI settings HiveCL needs, applied before MPI_Init (through the environment, unless
// the user set them). Both the client library and the proxy use them.
#pragma once

#include <cstdlib>
#include <string>

namespace hivecl::transport {

// Open MPI 4.1's TCP BTL deadlocks (the progress thread locks an endpoint mutex it holds)
// when a peer dies during a large transfer sent with its RDMA-like protocol, whose last step
// is a FIN message: a killed client froze its proxy for every other client (seen under
// tests/fault). Without "put", ob1 sends large messages with its pipelined send protocol.
inline constexpr const char* tcp_btl_flags_variable = "OMPI_MCA_btl_tcp_flags";
inline constexpr const char* tcp_btl_flags = "send,inplace,need-ack,need-csum";

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
