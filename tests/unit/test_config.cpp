#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "config.hpp"

using hivecl::Config;

TEST_CASE("settings come from the config file and the environment overrides them", "[config]") {
  const auto file = std::filesystem::temp_directory_path() / "hivecl-test-config.conf";
  {
    std::ofstream out(file);
    out << "# a comment\n"
           "cluster_dir = /tmp/from-file   # trailing comment\n"
           "chunk_bytes = 65536\n"
           "no_such_key = 1\n"
           "peer_timeout_ms = 1500\n";
  }
  setenv("HIVECL_CONFIG", file.c_str(), 1);
  setenv("HIVECL_PEER_TIMEOUT_MS", "2500", 1);
  setenv("HIVECL_PROXY_DEVICE_TYPE", "not-a-type", 1);
  const Config config = Config::load();
  unsetenv("HIVECL_CONFIG");
  unsetenv("HIVECL_PEER_TIMEOUT_MS");
  unsetenv("HIVECL_PROXY_DEVICE_TYPE");
  std::filesystem::remove(file);
  CHECK(config.cluster_dir == "/tmp/from-file");
  CHECK(config.chunk_bytes == 65536);
  CHECK(config.peer_timeout.count() == 2500);
  CHECK(config.proxy_device_type == "all");  // a bad value leaves the default
}

TEST_CASE("set() rejects unknown keys and bad values", "[config]") {
  Config config;
  CHECK(config.set("log", "debug"));
  CHECK_FALSE(config.set("log", "loud"));
  CHECK_FALSE(config.set("chunk_bytes", "12"));  // below the minimum
  CHECK_FALSE(config.set("chunk_bytes", "lots"));
  CHECK_FALSE(config.set("unknown", "1"));
  CHECK(config.describe().find("log = debug") != std::string::npos);
}

TEST_CASE("the nodes setting selects the nodes whose devices a client uses", "[config]") {
  Config config;
  CHECK(config.uses_node("any"));  // empty: every node
  REQUIRE(config.set("nodes", "gpu-1, gpu-3"));
  CHECK(config.uses_node("gpu-1"));
  CHECK(config.uses_node("gpu-3"));
  CHECK_FALSE(config.uses_node("gpu-2"));
  CHECK_FALSE(config.uses_node("gpu"));
}

TEST_CASE("proxy_devices selects devices by index and rejects what is not an index", "[config]") {
  Config config;
  CHECK(config.serves_device(7));  // empty: every device
  REQUIRE(config.set("proxy_devices", "0, 2"));
  CHECK(config.serves_device(0));
  CHECK_FALSE(config.serves_device(1));
  CHECK(config.serves_device(2));
  CHECK_FALSE(config.set("proxy_devices", "1,gpu"));
  CHECK(config.proxy_devices == "0, 2");
}
