// libFuzzer target for the proxy's session dispatcher: every input is the control frames of
// one client session (fuzz_inputs.hpp), decoded, dispatched and executed against the real
// native OpenCL (PoCL), exactly as hivecl-proxy runs them. What is NOT fuzzed here is MPI:
// the session's link to its client is a local sink (SinkLink below) that drops replies and
// answers every bulk-data receive at once with a filler pattern. The session starts greeted
// (its watchdog token check needs a real connection), and ends with a Goodbye and a
// teardown that releases everything it created, as when a client leaves.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz_inputs.hpp"
#include "log.hpp"
#include "proxy/server.hpp"
#include "proxy/session.hpp"

namespace {

using namespace hivecl;

class SinkLink final : public proxy::ClientLink {
 public:
  void listen(std::function<void(protocol::Bytes&&)>, std::function<bool()>) override {}
  void send_frame(protocol::Bytes&&) override {}
  void send_chunk(uint64_t, const std::byte*, size_t, std::function<void()> sent) override { sent(); }
  void send_status(uint64_t, cl_int) override {}
  std::shared_ptr<transport::Completion> receive_chunk(uint64_t, std::byte* data, size_t size) override {
    std::memset(data, 0x5A, size);
    auto completion = std::make_shared<transport::Completion>();
    completion->complete(transport::OpStatus::done);
    return completion;
  }
  bool receive_bulk(uint64_t, std::byte* data, size_t size, size_t) override {
    std::memset(data, 0x5A, size);
    return true;
  }
  void forget() override {}
};

// Small caps, so that no input can make the proxy allocate past libFuzzer's memory limit
// (a real proxy's caps come from its configuration; the default is none).
Config fuzz_config() {
  Config config;
  config.session_max_objects = 256;
  config.session_max_memory_bytes = 64u << 20;
  return config;
}

proxy::Server& server() {
  static proxy::Server instance = [] {
    log::set_level(log::Level::error);  // every rejected request is logged as a warning
    const Config config = fuzz_config();
    auto devices = proxy::find_native_devices(config);
    if (devices.empty()) std::abort();
    return proxy::Server(config, std::move(devices));
  }();
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto frames = fuzz::split_frames({reinterpret_cast<const std::byte*>(data), size});
  frames.push_back(fuzz::encode_frame<protocol::Goodbye>(0, {}));
  proxy::Session session(1, std::make_shared<SinkLink>(), server());
  session.set_greeted("fuzz", 0);
  session.start();
  for (auto& frame : frames) session.deliver(std::move(frame));
  return 0;  // ~Session joins the worker, which has released every object
}
