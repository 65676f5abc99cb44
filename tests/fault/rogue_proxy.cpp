// A proxy that answers with malformed frames, for libhivecl's handling of bad input from a
// proxy. `rogue-proxy DIR` publishes in the cluster directory DIR a record with the devices of
// the first proxy of HIVECL_CLUSTER_DIR under its own pid and watchdog, starts each client's
// session without MPI (transport/watchdog.hpp; the client must be of this node) and answers
// the session's CreateContext requests so:
//   first: bytes that are no frame, a frame of another protocol's magic, a statuses frame and
//     an output frame cut short, a status and an error reply for requests never made, then the
//     request's reply with bytes after it (the call must fail: CL_OUT_OF_RESOURCES);
//   second: a well-formed reply with CL_OUT_OF_HOST_MEMORY (the call must fail with it);
//   third: a frame of 70,000 bytes, over the client's max_message_bytes of 65,536 (the channel
//     breaks: that call and every later one must fail).
// Goodbye is answered; other requests are not. With `dies-at-goodbye` after DIR, it refuses every
// CreateContext well-formed (CL_OUT_OF_HOST_MEMORY) and exits at a Goodbye instead of answering
// it (a proxy dying while its client leaves). With `late-first-answer`, it starts a first session
// (1) whose Hello reply goes through its channel at once but whose admission it answers only after
// 1.5 s, past a client's connect_timeout_ms of 1000 (a proxy under load), and keeps that session
// on its channel, refusing CreateContext with CL_INVALID_VALUE; later sessions (2, ...) refuse it
// with CL_OUT_OF_HOST_MEMORY. It prints "ready" once its record is published and serves until it
// is killed.
#include <CL/cl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config.hpp"
#include "protocol/messages.hpp"
#include "transport/control_channel.hpp"
#include "transport/peer_memory.hpp"
#include "transport/rendezvous.hpp"
#include "transport/watchdog.hpp"

namespace {

using namespace hivecl;
using namespace hivecl::protocol;

// A frame: `header`, then `body` as it is.
Bytes frame_of(const FrameHeader& header, const Bytes& body = {}) {
  Bytes frame;
  Writer writer(frame);
  encode(writer, header);
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

Bytes cut_short(Bytes bytes) {
  bytes.resize(bytes.size() - 2);
  return bytes;
}

enum class Mode { malformed, dies_at_goodbye, late_first_answer };

class Rogue {
 public:
  explicit Rogue(Mode mode) : mode_(mode) {}

  // The watchdog's OnHello: the session of the client whose Hello this is.
  std::optional<uint32_t> start(Bytes&& frame) {
    Reader reader(frame);
    FrameHeader header;
    Hello::Request hello;
    if (!decode(reader, header) || !decode(reader, hello)) return std::nullopt;
    std::lock_guard lock(mutex_);
    const uint32_t session = ++sessions_;
    const bool given_up = mode_ == Mode::late_first_answer && session == 1;
    auto channel =
        transport::ControlChannel::attach(hello.pid, hello.control_fd, hello.control_inode, hello.control_bytes);
    if (!channel) return std::nullopt;
    contexts_ = 0;
    channel->listen([this, at = channel.get(), given_up](Bytes&& request) { answer(*at, request, given_up); }, [] {},
                    1u << 20, std::chrono::microseconds(0));
    channel->send(frame_of(
        {.opcode = Opcode::Hello, .kind = FrameKind::reply, .sequence = header.sequence},
        to_bytes(Hello::Reply{.session = session, .data_path = static_cast<uint8_t>(transport::DataPath::memory),
                              .chunk_bytes = 1u << 20, .max_message_bytes = 1u << 20, .shared_control = true})));
    if (given_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      stale_channel_ = std::move(channel);  // kept listening, as a session not ended yet
    } else {
      channel_ = std::move(channel);
    }
    return session;
  }

 private:
  // A channel's reader; `given_up`: the channel of a session whose client gave up its admission.
  void answer(transport::ControlChannel& channel, const Bytes& request, bool given_up) {
    Reader reader(request);
    FrameHeader header;
    if (!decode(reader, header)) return;
    const FrameHeader reply{.opcode = header.opcode, .kind = FrameKind::reply, .sequence = header.sequence};
    if (header.opcode == Opcode::Goodbye && mode_ == Mode::dies_at_goodbye) std::_Exit(0);
    if (header.opcode == Opcode::Goodbye) return (void)channel.send(frame_of(reply));
    if (header.opcode != Opcode::CreateContext) return;
    FrameHeader refusal = reply;
    refusal.status = given_up ? CL_INVALID_VALUE : CL_OUT_OF_HOST_MEMORY;
    if (mode_ != Mode::malformed) return (void)channel.send(frame_of(refusal));
    switch (++contexts_) {
      case 1: return send_malformed(channel, reply);
      case 2: return (void)channel.send(frame_of(refusal));
      case 3: return (void)channel.send(Bytes(70'000, std::byte{0}));
      default: return;
    }
  }

  void send_malformed(transport::ControlChannel& channel, const FrameHeader& reply) {
    channel.send(Bytes{std::byte{0x55}, std::byte{0xaa}, std::byte{0x01}});
    FrameHeader other_magic = reply;
    other_magic.magic = 0x12345678;
    channel.send(frame_of(other_magic));
    channel.send(cut_short(frame_of({.kind = FrameKind::statuses}, to_bytes(std::vector<uint64_t>{7, 8, 9}))));
    channel.send(cut_short(frame_of({.kind = FrameKind::output}, to_bytes(KernelOutput{Bytes(16, std::byte{'x'})}))));
    channel.send(frame_of({.kind = FrameKind::status, .sequence = 999'999}));
    FrameHeader unknown = reply;
    unknown.sequence = 999'998;
    unknown.status = CL_INVALID_VALUE;
    channel.send(frame_of(unknown));
    channel.send(frame_of(reply, Bytes(3, std::byte{1})));
  }

  const Mode mode_;
  std::mutex mutex_;
  std::unique_ptr<transport::ControlChannel> channel_;
  std::unique_ptr<transport::ControlChannel> stale_channel_;
  uint32_t sessions_ = 0;
  int contexts_ = 0;
};

std::optional<Mode> mode_named(int argc, char** argv) {
  if (argc == 2) return Mode::malformed;
  if (argc != 3) return std::nullopt;
  const std::string name = argv[2];
  if (name == "dies-at-goodbye") return Mode::dies_at_goodbye;
  if (name == "late-first-answer") return Mode::late_first_answer;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Mode> mode = mode_named(argc, argv);
  if (!mode) return 2;
  const Config config = Config::load();
  const auto proxies = transport::discover_proxies(config.cluster_dir);
  if (proxies.empty()) {
    std::puts("no proxy to copy the devices of");
    return 1;
  }
  Rogue rogue(*mode);
  transport::WatchdogServer watchdog;
  if (!watchdog.start(config.peer_timeout, [](uint32_t) {}, std::nullopt,
                      [&](const Bytes&, Bytes&& hello) { return rogue.start(std::move(hello)); }))
    return 1;
  ProxyRecord record = proxies.front();
  record.pid = static_cast<int32_t>(::getpid());
  record.watchdog_hosts = {"127.0.0.1"};
  record.watchdog_port = watchdog.port();
  if (transport::publish_proxy(argv[1], record).empty()) return 1;
  std::puts("ready");
  std::fflush(stdout);
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}
