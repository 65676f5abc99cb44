// The in-process transport's proxy side (transport/in_process.hpp): the session of the
// application's own process, its link (calls straight back into libhivecl) and its data
// path (the application's memory itself). Built into libhivecl-local.so with the proxy
// library, so that the requests run the proxy's very dispatcher, validation and executors.
#include "transport/in_process.hpp"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "log.hpp"
#include "node.hpp"
#include "proxy/data_path.hpp"
#include "proxy/server.hpp"
#include "proxy/session.hpp"
#include "proxy/vendors.hpp"

namespace hivecl::proxy {

namespace {

using transport::Completion;
using transport::OpStatus;

// Replies go straight to the client, unencoded; the data a request carries is the caller's own
// memory, read in order by the request that runs.
class InProcessLink final : public ClientLink {
 public:
  explicit InProcessLink(transport::InProcessClient& client) : client_(client) {}

  void offer(std::span<const std::byte> bulk) {
    bulk_ = bulk;
    taken_ = 0;
  }
  // Requests come through run().
  void listen(std::function<void(protocol::Bytes&&)>, std::function<bool()>) override {}
  bool hand_reply(protocol::Opcode opcode, uint64_t sequence, cl_int status, const void* reply) override {
    client_.on_reply(opcode, sequence, status, reply);
    return true;
  }
  // Every reply is handed over (hand_reply): nothing is encoded in-process.
  void send_frame(protocol::Bytes&&) override { log::error("in-process session: a frame to send"); }
  // Reads never come in chunks here: the executors read into the application's memory.
  void send_chunk(uint64_t, const std::byte*, size_t, std::function<void()> sent) override {
    log::error("in-process session: a read came in chunks");
    sent();
  }
  void send_status(uint64_t sequence, cl_int status) override { client_.on_status(sequence, status); }
  std::shared_ptr<Completion> receive_chunk(uint64_t, std::byte* data, size_t size) override {
    auto completion = std::make_shared<Completion>();
    completion->complete(take(data, size) ? OpStatus::done : OpStatus::failed);
    return completion;
  }
  bool receive_bulk(uint64_t, std::byte* data, size_t size, size_t) override { return take(data, size); }
  // The caller's own memory, which its thread leaves alone while the request runs.
  const std::byte* lend_bulk(size_t size) override {
    if (size > bulk_.size() - taken_) return nullptr;
    const std::byte* lent = bulk_.data() + taken_;
    taken_ += size;
    return lent;
  }
  void forget() override {}

 private:
  bool take(std::byte* data, size_t size) {
    if (size > bulk_.size() - taken_) return false;
    std::memcpy(data, bulk_.data() + taken_, size);
    taken_ += size;
    return true;
  }

  transport::InProcessClient& client_;
  std::span<const std::byte> bulk_;
  size_t taken_ = 0;
};

// The application's memory, named by its address in requests (as on the memory data path).
class InProcessDataPath final : public DataPath {
 public:
  transport::DataPath kind() const override { return transport::DataPath::in_process; }
  std::shared_ptr<Completion> fetch(uint64_t, uint64_t host_address, uint64_t offset, std::byte* slot,
                                    size_t size) override {
    std::memcpy(slot, reinterpret_cast<const std::byte*>(host_address + offset), size);
    auto completion = std::make_shared<Completion>();
    completion->complete(OpStatus::done);
    return completion;
  }
  void deliver(uint64_t, uint64_t host_address, uint64_t offset, const std::byte* slot, size_t size,
               std::function<void()> sent) override {
    std::memcpy(reinterpret_cast<std::byte*>(host_address + offset), slot, size);
    sent();
  }
};

class LocalBackend final : public transport::InProcessBackend {
 public:
  LocalBackend(const Config& config, std::vector<NativeDevice> devices) : server_(config, std::move(devices)) {
    for (size_t i = 0; i < server_.devices().size(); ++i) records_.push_back(describe_device(server_.devices()[i], i + 1));
  }
  const std::vector<protocol::DeviceRecord>& devices() const override { return records_; }

  void open(transport::InProcessClient& client) override {
    std::lock_guard lock(mutex_);
    link_ = std::make_shared<InProcessLink>(client);
    session_ = std::make_unique<Session>(0, link_, server_);
    session_->set_greeted(node_name(), static_cast<int32_t>(::getpid()));
    session_->set_data_path(std::make_unique<InProcessDataPath>());
  }

  // One request at a time, as a proxy's session worker runs them; then the caller waits for
  // what the request left it (its reply or status comes from that wait).
  void run(protocol::Opcode opcode, uint64_t sequence, const void* request, std::span<const std::byte> bulk) override {
    std::vector<CallerWait> waits;
    {
      std::lock_guard lock(mutex_);
      if (!session_) return;
      link_->offer(bulk);
      session_->run(opcode, sequence, request, waits);
      link_->offer({});
    }
    for (const CallerWait& wait : waits) wait(mutex_);
  }

 private:
  Server server_;
  std::vector<protocol::DeviceRecord> records_;
  std::mutex mutex_;
  std::shared_ptr<InProcessLink> link_;
  std::unique_ptr<Session> session_;
};

}  // namespace

}  // namespace hivecl::proxy

extern "C" __attribute__((visibility("default"))) hivecl::transport::InProcessBackend* hivecl_in_process_backend(
    const hivecl::Config& config, const void* own_icd_entry) {
  hivecl::log::Level level;
  if (hivecl::log::parse_level(config.log_level, level)) hivecl::log::set_level(level);  // this library's own logger
  try {
    auto devices = hivecl::proxy::find_vendor_devices(config, own_icd_entry);
    if (devices.empty()) return nullptr;
    return new hivecl::proxy::LocalBackend(config, std::move(devices));
  } catch (const std::exception& error) {
    hivecl::log::error("in-process devices: ", error.what());
    return nullptr;
  }
}
