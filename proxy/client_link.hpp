// What a session needs from its connection to one client: control frames both ways and
// the bulk data of requests. The proxy's link to a client process is MPI, a shared control
// channel, or MPI for bulk data and the channel for frames (ClientProcessLink); the session fuzz
// target (tests/fuzz) puts a sink in its place, so that the dispatcher and the executors
// can be driven without MPI.
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "config.hpp"
#include "protocol/codec.hpp"
#include "protocol/messages.hpp"
#include "transport/control_channel.hpp"
#include "transport/engine.hpp"

namespace hivecl::proxy {

// Host memory for data passing through the proxy, left uninitialised.
struct HostBuffer {
  explicit HostBuffer(size_t bytes) : data(new std::byte[bytes]), size(bytes) {}
  std::unique_ptr<std::byte[]> data;
  size_t size;
};

// Shared by its session and by the answers kept for later (Replier).
class ClientLink : public std::enable_shared_from_this<ClientLink> {
 public:
  virtual ~ClientLink() = default;
  // Hands every incoming control frame to `on_frame` (in the link's own thread), except, while
  // `worker_takes()` says so, those that the session's worker takes itself (try_take_frame).
  virtual void listen(std::function<void(protocol::Bytes&&)> on_frame, std::function<bool()> worker_takes) = 0;
  // Takes the next control frame and hands it to on_frame in the calling thread, if frames come
  // through a shared channel, all of it is there and no other thread is taking one.
  virtual void try_take_frame() {}
  // Any thread; harmless once the client is gone.
  virtual void send_frame(protocol::Bytes&& frame) = 0;
  // Text that kernels printed (output_capture.hpp), in a frame of its own.
  virtual void send_output(std::span<const std::byte> text) { send_frame(output_frame(text)); }
  // The client made a program that may print: what kernels printed goes before each frame.
  virtual void note_printing() {}
  // Moves control frames both ways to the shared-memory channel a client of this node offered
  // in `hello` (transport/control_channel.hpp), from the next frame sent on; `on_broken` runs
  // if the client breaks it. False: frames stay where they were. (True where they go there already.)
  virtual bool share_control(const protocol::Hello::Request&, const Config&, std::function<void()>) { return false; }
  // The watchdog started this session with the client's Hello (transport/watchdog.hpp): no MPI,
  // frames through the channel the Hello named, the data path chosen then.
  virtual bool started_without_mpi() const { return false; }
  // Hands request `sequence`'s reply over in memory where the client shares this process
  // (`reply`: message `opcode`'s Reply, or null with an error status); false: encode it.
  virtual bool hand_reply(protocol::Opcode, uint64_t, cl_int, const void*) { return false; }
  // Sends one chunk of request `sequence`'s data; `sent` runs when `data` may be reused.
  virtual void send_chunk(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent) = 0;
  // Sends the status that follows request `sequence`'s data.
  virtual void send_status(uint64_t sequence, cl_int status) = 0;
  // Sends `status` as the status of each request of `sequences`.
  virtual void send_statuses(const std::vector<uint64_t>& sequences, cl_int status) {
    for (const uint64_t sequence : sequences) send_status(sequence, status);
  }
  // Receives one chunk of request `sequence`'s data; the completion says whether it came.
  virtual std::shared_ptr<transport::Completion> receive_chunk(uint64_t sequence, std::byte* data, size_t size) = 0;
  // Receives `size` bytes sent on the data tag of `sequence`; false when the client vanished.
  virtual bool receive_bulk(uint64_t sequence, std::byte* data, size_t size, size_t chunk) = 0;
  // The next `size` bytes of the running request's bulk data where they already are, readable
  // until the request has run, instead of receive_bulk; null when they must be received.
  virtual const std::byte* lend_bulk(size_t) { return nullptr; }
  // Gives up everything in flight with this client.
  virtual void forget() = 0;
  // As forget, for a client that ended the session itself: what was sent to it still goes.
  virtual void forget_after_sending() { forget(); }

 protected:
  static protocol::Bytes output_frame(std::span<const std::byte> text);
};

using ClientLinkPtr = std::shared_ptr<ClientLink>;

class ClientProcessLink final : public ClientLink {
 public:
  // Over MPI (a shared control channel may come with Hello).
  ClientProcessLink(transport::Engine& engine, transport::LinkPtr link) : engine_(engine), link_(std::move(link)) {}
  // Without MPI: every frame through `channel`; `on_broken` runs if the client breaks it.
  ClientProcessLink(transport::Engine& engine, std::unique_ptr<transport::ControlChannel> channel, const Config& config,
                    std::function<void()> on_broken);
  void listen(std::function<void(protocol::Bytes&&)> on_frame, std::function<bool()> worker_takes) override;
  void try_take_frame() override;
  bool share_control(const protocol::Hello::Request& hello, const Config& config,
                     std::function<void()> on_broken) override;
  bool started_without_mpi() const override { return !link_; }
  void send_frame(protocol::Bytes&& frame) override;
  void send_output(std::span<const std::byte> text) override { send_now(output_frame(text)); }
  void note_printing() override { printing_.store(true, std::memory_order_relaxed); }
  void send_chunk(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent) override;
  void send_status(uint64_t sequence, cl_int status) override;
  // One frame on a shared control channel.
  void send_statuses(const std::vector<uint64_t>& sequences, cl_int status) override;
  std::shared_ptr<transport::Completion> receive_chunk(uint64_t sequence, std::byte* data, size_t size) override;
  bool receive_bulk(uint64_t sequence, std::byte* data, size_t size, size_t chunk) override;
  void forget() override;
  void forget_after_sending() override;

 private:
  void before_sending() const;
  void send_now(protocol::Bytes&& frame);
  void stop_listening();

  // Starts the channel's reader, handing frames to on_frame_.
  void listen_to_channel(const Config& config, std::function<void()> on_broken);

  transport::Engine& engine_;
  transport::LinkPtr link_;  // null without MPI
  // Without MPI: what listen() starts the channel's reader with.
  const Config* config_ = nullptr;
  std::function<void()> on_broken_;
  std::function<void(protocol::Bytes&&)> on_frame_;
  std::function<bool()> worker_takes_;
  std::mutex control_mutex_;
  bool forgotten_ = false;
  std::unique_ptr<transport::ControlChannel> control_;
  std::atomic<transport::ControlChannel*> shared_control_{nullptr};  // control_, once frames go there
  std::atomic<bool> printing_{false};
};

}  // namespace hivecl::proxy
