#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "loopback_listener.hpp"
#include "transport/rendezvous.hpp"

namespace fs = std::filesystem;

namespace {

bool reachable_with_uri(const std::string& uri) {
  const fs::path directory = fs::temp_directory_path() / ("hivecl-rendezvous-test-" + std::to_string(::getpid()));
  fs::create_directories(directory);
  std::ofstream(hivecl::transport::ompi_server_uri_path(directory.string())) << uri << '\n';
  const bool reachable = hivecl::transport::ompi_server_reachable(directory.string());
  fs::remove_all(directory);
  return reachable;
}

}  // namespace

TEST_CASE("ompi-server's URI: any of the addresses it lists may answer", "[rendezvous]") {
  LoopbackListener listener;
  const std::string port = std::to_string(listener.port);
  CHECK(reachable_with_uri("1.0;tcp://127.0.0.1:" + port + ";tcp6://[::1]:1"));
  // One address per interface; here the first refuses (nothing listens on 127.0.0.2).
  CHECK(reachable_with_uri("1.0;tcp://127.0.0.2,127.0.0.1:" + port + ";tcp6://[::1]:1"));
  CHECK_FALSE(reachable_with_uri("1.0;tcp://127.0.0.2:" + port));
  CHECK_FALSE(reachable_with_uri("1.0;tcp6://[::1]:" + port));
  CHECK_FALSE(reachable_with_uri("garbage"));
}
