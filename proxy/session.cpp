#include "proxy/session.hpp"

#include <algorithm>
#include <new>

#include "log.hpp"
#include "proxy/executors.hpp"
#include "proxy/server.hpp"
#include "transport/tags.hpp"

namespace hivecl::proxy {

using namespace protocol;
using transport::OpStatus;

void Replier::send_bulk(std::shared_ptr<HostBuffer> data, size_t chunk, cl_int status) const {
  const int tag = transport::data_tag(sequence_);
  const size_t size = data->size;
  for (size_t offset = 0; offset < size; offset += chunk)
    engine_->send(link_, tag, data->data.get() + offset, std::min(chunk, size - offset),
                  [data](OpStatus, Bytes&&) {});  // the lambda keeps the data alive until sent
  engine_->send(link_, tag, to_bytes(static_cast<int32_t>(status)));
}

Session::Session(uint32_t number, transport::LinkPtr link, Server& server)
    : number_(number), link_(std::move(link)), server_(server) {}

Session::~Session() {
  if (worker_.joinable()) worker_.join();
}

void Session::start() {
  server_.engine().listen(link_, transport::control_tag, true, [this](Bytes&& frame) { deliver(std::move(frame)); });
  worker_ = std::thread([this] { work(); });
}

void Session::deliver(Bytes&& frame) {
  {
    std::lock_guard lock(inbox_mutex_);
    inbox_.push_back(std::move(frame));
  }
  inbox_cv_.notify_one();
}

void Session::lose() {
  if (lost_.exchange(true)) return;
  server_.engine().forget(link_);
  inbox_cv_.notify_one();
}

Replier Session::replier(uint64_t sequence) const { return Replier(server_.engine(), link_, sequence); }

size_t Session::chunk_bytes() const { return server_.config().chunk_bytes; }

cl_device_id Session::device(ObjectId id) const {
  const auto& devices = server_.devices();
  if (id == no_object || id > devices.size()) throw ClError{CL_INVALID_DEVICE};
  return devices[id - 1].device;
}

cl_platform_id Session::platform_of(ObjectId device_id) const {
  device(device_id);
  return server_.devices()[device_id - 1].platform;
}

std::vector<cl_device_id> Session::devices(const std::vector<ObjectId>& ids) const {
  std::vector<cl_device_id> natives;
  for (ObjectId id : ids) natives.push_back(device(id));
  return natives;
}

std::vector<cl_event> Session::events(const std::vector<ObjectId>& ids, cl_int invalid) const {
  std::vector<cl_event> natives;
  for (ObjectId id : ids) {
    void* native = objects_.find(id, ObjectKind::event);
    if (!native) throw ClError{invalid};
    natives.push_back(static_cast<cl_event>(native));
  }
  return natives;
}

void Session::check_fresh(ObjectId id) const {
  if (!objects_.is_free(id)) throw ClError{CL_INVALID_VALUE};
}

void Session::add(ObjectId id, ObjectKind kind, void* native) {
  if (!objects_.insert(id, kind, native)) throw ClError{CL_INVALID_VALUE};
}

namespace {

cl_int release_native(ObjectKind kind, void* native) {
  switch (kind) {
    case ObjectKind::context: return clReleaseContext(static_cast<cl_context>(native));
    case ObjectKind::command_queue: return clReleaseCommandQueue(static_cast<cl_command_queue>(native));
    case ObjectKind::mem: return clReleaseMemObject(static_cast<cl_mem>(native));
    case ObjectKind::program: return clReleaseProgram(static_cast<cl_program>(native));
    case ObjectKind::kernel: return clReleaseKernel(static_cast<cl_kernel>(native));
    case ObjectKind::event: return clReleaseEvent(static_cast<cl_event>(native));
    case ObjectKind::device: break;
  }
  return CL_INVALID_VALUE;
}

// Releasing dependants before what they depend on keeps native runtimes on their well-trodden path.
int teardown_rank(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::event: return 0;
    case ObjectKind::kernel: return 1;
    case ObjectKind::program: return 2;
    case ObjectKind::mem: return 3;
    case ObjectKind::command_queue: return 4;
    case ObjectKind::context: return 5;
    case ObjectKind::device: break;
  }
  return 6;
}

}  // namespace

void Session::release(ObjectKind kind, ObjectId id) {
  const auto entry = objects_.erase(id, kind);
  if (!entry) {
    log::warn("session ", number_, ": release of unknown object ", id);
    return;
  }
  release_native(kind, entry->native);
}

std::shared_ptr<HostBuffer> Session::receive_bulk(uint64_t sequence, uint64_t size) {
  auto data = std::make_shared<HostBuffer>(size);
  auto transfer = transport::Transfer::receive(server_.engine(), link_, transport::data_tag(sequence),
                                               data->data.get(), size, chunk_bytes());
  if (transfer->wait() != OpStatus::done) throw ClError{peer_lost_status};
  return data;
}

void Session::drain_bulk(uint64_t sequence, uint64_t size) {
  // Received a chunk at a time into one scratch buffer, so a forged size costs no memory.
  Bytes scratch(std::min<uint64_t>(size, chunk_bytes()));
  for (uint64_t offset = 0; offset < size; offset += scratch.size()) {
    const size_t piece = std::min<uint64_t>(scratch.size(), size - offset);
    auto transfer = transport::Transfer::receive(server_.engine(), link_, transport::data_tag(sequence),
                                                 scratch.data(), piece, piece);
    if (transfer->wait() != OpStatus::done) return;
  }
}

bool Session::next_frame(Bytes& frame) {
  std::unique_lock lock(inbox_mutex_);
  // A client that connected but never said Hello is dropped after the connect timeout.
  const auto deadline = std::chrono::steady_clock::now() + server_.config().connect_timeout;
  while (inbox_.empty() && !lost_) {
    if (greeted_) {
      inbox_cv_.wait(lock);
    } else if (inbox_cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox_.empty()) {
      log::warn("session ", number_, ": no Hello within the connect timeout");
      return false;
    }
  }
  if (lost_) return false;
  frame = std::move(inbox_.front());
  inbox_.pop_front();
  return true;
}

void Session::work() {
  Bytes frame;
  while (!ending_ && next_frame(frame)) handle(frame);
  teardown();
}

namespace {

template <class M>
void run_message(Session& session, const FrameHeader& header, Reader& reader) {
  typename M::Request request;
  const Replier replier = session.replier(header.sequence);
  if (!decode(reader, request) || !reader.at_end()) {
    log::warn("session ", session.number(), ": malformed ", M::message_name, " request");
    if constexpr (M::has_reply) replier.reply<M>(CL_INVALID_VALUE);
    return;
  }
  if (!session.greeted() && M::opcode != Opcode::Hello) {
    log::warn("session ", session.number(), ": ", M::message_name, " before Hello; closing");
    session.end();
    return;
  }
  log::trace("session ", session.number(), ": ", M::message_name, " #", header.sequence);
  Call call{session, header.sequence};
  cl_int status = CL_SUCCESS;
  try {
    if constexpr (replies_later<M>) {
      execute(call, request, replier);
      return;
    } else {
      auto reply = execute(call, request);
      if constexpr (M::has_reply) replier.reply<M>(CL_SUCCESS, reply);
      return;
    }
  } catch (const ClError& error) {
    status = error.code;
  } catch (const std::bad_alloc&) {
    status = CL_OUT_OF_HOST_MEMORY;
  }
  if constexpr (M::bulk == Bulk::to_proxy)
    if (!call.bulk_consumed) session.drain_bulk(header.sequence, request.bulk_bytes());
  if constexpr (M::has_reply) replier.reply<M>(status);
}

}  // namespace

void Session::handle(const Bytes& frame) {
  Reader reader(frame);
  FrameHeader header;
  if (!decode(reader, header) || header.magic != frame_magic || header.kind != FrameKind::request) {
    log::warn("session ", number_, ": dropped a frame without a valid header");
    return;
  }
  const bool known = visit_opcode(header.opcode, [&]<class M>() { run_message<M>(*this, header, reader); });
  if (!known) {
    log::warn("session ", number_, ": unknown opcode ", static_cast<unsigned>(header.opcode));
    FrameHeader reply{.opcode = header.opcode, .kind = FrameKind::reply, .sequence = header.sequence,
                      .status = CL_INVALID_OPERATION};
    server_.engine().send(link_, transport::control_tag, to_bytes(reply));
  }
}

void Session::hold_user_event(cl_event event) {
  clRetainEvent(event);
  user_events_.push_back(event);
}

void Session::teardown() {
  if (!lost_.exchange(true)) server_.engine().forget(link_);
  server_.watchdog().release(number_);
  auto objects = objects_.take_all();
  for (cl_event event : user_events_) {
    clSetUserEventStatus(event, peer_lost_status);  // CL_INVALID_OPERATION if already set
    clReleaseEvent(event);
  }
  // Let running commands end before their objects go (their callbacks hold what they need).
  log::debug("session ", number_, ": finishing its queues");
  for (auto& [id, entry] : objects)
    if (entry.kind == ObjectKind::command_queue) clFinish(static_cast<cl_command_queue>(entry.native));
  log::debug("session ", number_, ": releasing its objects");
  std::sort(objects.begin(), objects.end(),
            [](const auto& a, const auto& b) { return teardown_rank(a.second.kind) < teardown_rank(b.second.kind); });
  for (auto& [id, entry] : objects) release_native(entry.kind, entry.native);
  log::info("session ", number_, " ended: released ", objects.size(), " objects");
  finished_ = true;
}

// --- session-level executors -------------------------------------------------------

Hello::Reply execute(Call& call, const Hello::Request& request) {
  if (call.session.greeted()) throw ClError{CL_INVALID_OPERATION};
  if (request.version != protocol_version) {
    log::warn("session ", call.session.number(), ": client speaks protocol ", request.version, ", not ",
              protocol_version);
    call.session.end();
    throw ClError{CL_INVALID_OPERATION};
  }
  if (!call.session.server().watchdog().claim(request.watchdog_token, call.session.number())) {
    log::warn("session ", call.session.number(), ": Hello with an unknown watchdog token; closing");
    call.session.end();
    throw ClError{CL_INVALID_OPERATION};
  }
  call.session.set_greeted();
  log::info("session ", call.session.number(), ": client ", request.host, " pid ", request.pid);
  return {.session = call.session.number()};
}

Goodbye::Reply execute(Call& call, const Goodbye::Request&) {
  call.session.end();
  return {};
}

Release::Reply execute(Call& call, const Release::Request& request) {
  call.session.release(request.kind, request.id);
  return {};
}

}  // namespace hivecl::proxy
