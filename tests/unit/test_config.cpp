#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

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
  CHECK(config.set("proxy_log", "warn"));
  CHECK_FALSE(config.set("proxy_log", "quiet"));
  CHECK_FALSE(config.set("chunk_bytes", "12"));  // below the minimum
  CHECK_FALSE(config.set("chunk_bytes", "5000"));  // not whole pages
  CHECK_FALSE(config.set("chunk_bytes", "lots"));
  CHECK(config.set("local_proxy_moves", "proxy"));
  CHECK_FALSE(config.set("local_proxy_moves", "sometimes"));
  CHECK_FALSE(config.set("unknown", "1"));
  CHECK(config.describe().find("log = debug") != std::string::npos);
  CHECK(config.describe().find("proxy_log = warn") != std::string::npos);
}

TEST_CASE("inside a Slurm job the default cluster is the job's own", "[config]") {
  const char* set_outside = std::getenv("HIVECL_CLUSTER_DIR");
  const std::string saved = set_outside ? set_outside : "";
  unsetenv("HIVECL_CLUSTER_DIR");
  setenv("SLURM_JOB_ID", "4242", 1);
  const Config in_job = Config::load();
  unsetenv("SLURM_JOB_ID");
  const Config outside = Config::load();
  if (set_outside) setenv("HIVECL_CLUSTER_DIR", saved.c_str(), 1);
  CHECK(in_job.cluster_dir.ends_with("/.hivecl/slurm-4242"));
  CHECK(outside.cluster_dir.ends_with("/.hivecl/default"));
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

TEST_CASE("proxy_poll_spin_us is a duration or auto (by the node's cores)", "[config]") {
  Config config;
  REQUIRE(config.set("poll_spin_us", "1500"));
  const auto automatic = config.session_poll_spin();
  CHECK((automatic == std::chrono::microseconds(20000) || automatic == std::chrono::microseconds(1500)));
  CHECK(config.describe().find("proxy_poll_spin_us = auto") != std::string::npos);
  REQUIRE(config.set("proxy_poll_spin_us", "5000"));
  CHECK(config.session_poll_spin() == std::chrono::microseconds(5000));
  CHECK(config.describe().find("proxy_poll_spin_us = 5000") != std::string::npos);
  CHECK_FALSE(config.set("proxy_poll_spin_us", "soon"));
  CHECK(config.session_poll_spin() == std::chrono::microseconds(5000));  // a bad value changes nothing
  REQUIRE(config.set("proxy_poll_spin_us", "auto"));
  CHECK(config.session_poll_spin() == automatic);
}

TEST_CASE("launch_gate_us is auto (the default: 5 us on NVIDIA's platform), a duration on every platform, or off",
          "[config]") {
  Config config;
  CHECK(config.launch_gate == std::chrono::microseconds(5));
  CHECK(config.launch_gate_platform == "NVIDIA");
  CHECK(config.describe().find("launch_gate_us = auto\n") != std::string::npos);
  REQUIRE(config.set("launch_gate_us", "5"));
  REQUIRE(config.launch_gate == std::chrono::microseconds(5));
  CHECK(config.launch_gate_platform.empty());
  CHECK(config.describe().find("launch_gate_us = 5\n") != std::string::npos);
  REQUIRE(config.set("launch_gate_us", "off"));
  CHECK_FALSE(config.launch_gate);
  CHECK(config.describe().find("launch_gate_us = off\n") != std::string::npos);
  REQUIRE(config.set("launch_gate_us", "0"));
  CHECK(config.launch_gate == std::chrono::microseconds(0));
  CHECK_FALSE(config.set("launch_gate_us", "sometimes"));
  CHECK(config.launch_gate == std::chrono::microseconds(0));
  REQUIRE(config.set("launch_gate_us", "auto"));
  CHECK(config.launch_gate == std::chrono::microseconds(5));
  CHECK(config.launch_gate_platform == "NVIDIA");
}
