#include "proxy/client_link.hpp"

#include <algorithm>

#include "proxy/output_capture.hpp"
#include "proxy/waiting.hpp"
#include "transport/tags.hpp"

namespace hivecl::proxy {

using protocol::Bytes;
using transport::OpStatus;

ClientProcessLink::ClientProcessLink(transport::Engine& engine, std::unique_ptr<transport::ControlChannel> channel,
                                     const Config& config, std::function<void()> on_broken)
    : engine_(engine), config_(&config), on_broken_(std::move(on_broken)), control_(std::move(channel)) {
  shared_control_.store(control_.get(), std::memory_order_release);
}

void ClientProcessLink::listen(std::function<void(Bytes&&)> on_frame, std::function<bool()> worker_takes) {
  on_frame_ = on_frame;
  worker_takes_ = std::move(worker_takes);
  if (!link_) {
    std::lock_guard lock(control_mutex_);
    if (!forgotten_) listen_to_channel(*config_, std::move(on_broken_));
    return;
  }
  engine_.listen(link_, transport::control_tag, true, std::move(on_frame));
}

void ClientProcessLink::listen_to_channel(const Config& config, std::function<void()> on_broken) {
  control_->listen(on_frame_, std::move(on_broken), config.max_message_bytes, config.session_poll_spin(),
                   clients_waiting, worker_takes_);
}

void ClientProcessLink::try_take_frame() {
  if (auto* channel = shared_control_.load(std::memory_order_acquire)) channel->try_take();
}

bool ClientProcessLink::share_control(const protocol::Hello::Request& hello, const Config& config,
                                  std::function<void()> on_broken) {
  std::lock_guard lock(control_mutex_);
  if (!link_) return !forgotten_;  // the channel is this link
  if (hello.control_bytes == 0 || control_ || forgotten_) return false;
  control_ = transport::ControlChannel::attach(hello.pid, hello.control_fd, hello.control_inode, hello.control_bytes);
  if (!control_) return false;
  listen_to_channel(config, std::move(on_broken));
  shared_control_.store(control_.get(), std::memory_order_release);
  return true;
}

Bytes ClientLink::output_frame(std::span<const std::byte> text) {
  Bytes frame;
  protocol::Writer writer(frame);
  protocol::encode(writer, protocol::FrameHeader{.kind = protocol::FrameKind::output});
  protocol::encode(writer, protocol::KernelOutput{Bytes(text.begin(), text.end())});
  return frame;
}

// What the client's kernels printed goes first, as natively it is there when a call returns.
void ClientProcessLink::before_sending() const {
  if (printing_.load(std::memory_order_relaxed)) OutputCapture::get().drain();
}

void ClientProcessLink::send_frame(Bytes&& frame) {
  before_sending();
  send_now(std::move(frame));
}

void ClientProcessLink::send_now(Bytes&& frame) {
  if (auto* channel = shared_control_.load(std::memory_order_acquire)) {
    channel->send(frame);  // fails only once the client is gone or broke the channel
    return;
  }
  engine_.send(link_, transport::control_tag, std::move(frame));
}

// Bulk data goes over MPI; without MPI only the memory data path serves a session (Hello), so
// these are not called then, and fail as for a vanished client if they were.
void ClientProcessLink::send_chunk(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent) {
  if (!link_) return sent();
  engine_.send(link_, transport::data_tag(sequence), data, size,
               [sent = std::move(sent)](OpStatus, Bytes&&) { sent(); });
}

std::shared_ptr<transport::Completion> ClientProcessLink::receive_chunk(uint64_t sequence, std::byte* data, size_t size) {
  auto completion = std::make_shared<transport::Completion>();
  if (!link_) {
    completion->complete(OpStatus::cancelled);
    return completion;
  }
  engine_.receive(link_, transport::data_tag(sequence), data, size,
                  [completion](OpStatus status, Bytes&&) { completion->complete(status); });
  return completion;
}

void ClientProcessLink::send_status(uint64_t sequence, cl_int status) {
  before_sending();
  if (auto* channel = shared_control_.load(std::memory_order_acquire)) {
    channel->send(protocol::to_bytes(
        protocol::FrameHeader{.kind = protocol::FrameKind::status, .sequence = sequence, .status = status}));
    return;
  }
  Bytes end;
  end.reserve(sizeof status);  // GCC 12 warns (stringop-overflow) when the vector grows from empty here
  protocol::Writer writer(end);
  protocol::encode(writer, static_cast<int32_t>(status));
  engine_.send(link_, transport::data_tag(sequence), std::move(end));
}

void ClientProcessLink::send_statuses(const std::vector<uint64_t>& sequences, cl_int status) {
  auto* channel = shared_control_.load(std::memory_order_acquire);
  if (!channel) return ClientLink::send_statuses(sequences, status);
  before_sending();
  Bytes frame;
  protocol::Writer writer(frame);
  protocol::encode(writer, protocol::FrameHeader{.kind = protocol::FrameKind::statuses, .status = status});
  protocol::encode(writer, sequences);
  channel->send(frame);
}

bool ClientProcessLink::receive_bulk(uint64_t sequence, std::byte* data, size_t size, size_t chunk) {
  if (!link_) return false;
  auto transfer = transport::Transfer::receive(engine_, link_, transport::data_tag(sequence), data, size, chunk);
  return transfer->wait() == OpStatus::done;
}

void ClientProcessLink::forget() {
  stop_listening();
  if (link_) engine_.forget(link_);
}

void ClientProcessLink::forget_after_sending() {
  stop_listening();
  if (link_) engine_.forget_after_sends(link_);
}

void ClientProcessLink::stop_listening() {
  std::lock_guard lock(control_mutex_);
  forgotten_ = true;
  if (control_) control_->stop();  // its reader delivers no more frames to the session
}

}  // namespace hivecl::proxy
