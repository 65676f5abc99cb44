#include "proxy/session.hpp"

#include <malloc.h>

#include <algorithm>
#include <new>

#include "log.hpp"
#include "proxy/executors.hpp"
#include "proxy/output_capture.hpp"
#include "proxy/server.hpp"
#include "proxy/vendors.hpp"
#include "transport/polling.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

std::atomic<int> replies_owed{0};

}  // namespace

bool clients_waiting() { return replies_owed.load(std::memory_order_relaxed) > 0; }

void Replier::owe() {
  owed_ = true;
  replies_owed.fetch_add(1, std::memory_order_relaxed);
}

void Replier::paid() { replies_owed.fetch_sub(1, std::memory_order_relaxed); }

void Replier::send_status(cl_int status) const { link_->send_status(sequence_, status); }

void Replier::refuse(Opcode opcode, cl_int status) const {
  link_->send_frame(to_bytes(FrameHeader{.opcode = opcode, .kind = FrameKind::reply, .sequence = sequence_,
                                         .status = status}));
}

Session::Session(uint32_t number, ClientLinkPtr link, Server& server)
    : number_(number),
      link_(std::move(link)),
      server_(server),
      usage_(server.config().session_max_objects, server.config().session_max_memory_bytes),
      launch_gate_(server.config().launch_gate),
      // The link, not the session: a report may come after the session has gone, as a reply may.
      read_reports_([link = link_](const std::vector<uint64_t>& sequences, cl_int status) {
        link->send_statuses(sequences, status);
      }),
      data_path_(std::make_unique<MpiDataPath>(link_)) {}

Session::~Session() {
  if (worker_.joinable()) worker_.join();
}

void Session::start() {
  link_->listen([this](Bytes&& frame) { deliver(std::move(frame)); },
                [this] { return worker_takes_.load(std::memory_order_acquire); });
  worker_ = std::thread([this] { work(); });
}

void Session::deliver(Bytes&& frame) {
  std::unique_ptr<Inbound> request = decode_frame(frame);
  if (!request) return;
  {
    std::lock_guard lock(inbox_mutex_);
    inbox_.push_back(std::move(request));
    inbox_size_.fetch_add(1, std::memory_order_release);
  }
  inbox_cv_.notify_one();
}

void Session::lose() {
  if (lost_.exchange(true)) return;
  link_->forget();
  inbox_cv_.notify_one();
}

void Session::set_greeted(std::string client_host, int32_t client_pid) {
  statistics_.set_client(std::move(client_host), client_pid);
  client_pid_ = client_pid;
  greeted_ = true;
  OutputCapture::get().join(link_);
}

void Session::drain_output_for_exit() { OutputCapture::get().drain(link_.get()); }

void Session::note_program(bool may_print) {
  if (may_print) link_->note_printing();
  OutputCapture::get().note_program(link_.get(), may_print);
}

void Session::note_build(cl_program program, std::optional<SwitchlessBuild> build) {
  if (build)
    switchless_builds_[program] = std::move(*build);
  else
    switchless_builds_.erase(program);
}

const Session::SwitchlessBuild* Session::switchless_build(cl_program program) const {
  const auto found = switchless_builds_.find(program);
  return found == switchless_builds_.end() ? nullptr : &found->second;
}

Replier Session::replier(uint64_t sequence) const { return Replier(*link_, sequence); }

size_t Session::chunk_bytes() const { return server_.config().chunk_bytes; }

void Session::choose_data_path(const Hello::Request& hello) {
  // The token was claimed (it is this client's watchdog connection's): it is the probe's proof.
  data_path_ = proxy::choose_data_path(hello, hello.watchdog_token, number_, link_, server_.config().copy_threads);
}

bool Session::share_control(const Hello::Request& hello) {
  if (!transport::moves_by_memory(data_path_->kind()) || hello.control_bytes == 0) return false;
  const bool shared = link_->share_control(hello, server_.config(), [this] {
    log::warn("session ", number_, ": the client broke the shared control channel; closing");
    lose();
  });
  log::info("session ", number_, ": control frames through ",
            shared ? "shared memory" : "MPI (the offered channel cannot be mapped)");
  return shared;
}

StagingRing& Session::staging(cl_context context, cl_device_id device) {
  std::lock_guard lock(staging_mutex_);
  auto& ring = staging_[context];
  if (!ring) ring = take_ring(device, server_.config().staging_slots, chunk_bytes());
  return *ring;
}

// The ring goes back once the context's transfers have given back their slots (give_back_ring).
void Session::drop_staging(cl_context context) {
  std::unique_ptr<StagingRing> ring;
  {
    std::lock_guard lock(staging_mutex_);
    const auto it = staging_.find(context);
    if (it == staging_.end()) return;
    ring = std::move(it->second);
    staging_.erase(it);
  }
  give_back_ring(std::move(ring));
}

void Session::note_queue(cl_command_queue queue, QueueFacts facts) {
  facts.gated = facts.in_order && launch_gate_covers(facts.device);
  queue_facts_[queue] = facts;
}

bool Session::launch_gate_covers(cl_device_id device) const {
  const Config& config = server_.config();
  return config.launch_gate &&
         platform_name_of(device).find(config.launch_gate_platform) != std::string::npos;
}

Session::QueueFacts Session::facts_of(cl_command_queue queue) const {
  if (const auto found = queue_facts_.find(queue); found != queue_facts_.end()) return found->second;
  QueueFacts facts{.context = nullptr, .device = nullptr, .in_order = is_in_order(queue)};
  check(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof facts.context, &facts.context, nullptr));
  check(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof facts.device, &facts.device, nullptr));
  facts.gated = facts.in_order && launch_gate_covers(facts.device);
  return facts;
}

cl_device_id Session::device(ObjectId id) const {
  if (id >= first_session_id) {  // a sub-device the client made
    void* native = objects_.find(id, ObjectKind::device);
    if (!native) throw ClError{CL_INVALID_DEVICE};
    return static_cast<cl_device_id>(native);
  }
  const auto& devices = server_.devices();
  if (id == no_object || id > devices.size()) throw ClError{CL_INVALID_DEVICE};
  return devices[id - 1].device;
}

cl_platform_id Session::platform_of(ObjectId device_id) const {
  cl_platform_id platform = nullptr;
  check(clGetDeviceInfo(device(device_id), CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr));
  return platform;
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

void Session::check_fresh(ObjectId id, uint64_t device_bytes) const {
  if (!objects_.is_free(id)) throw ClError{CL_INVALID_VALUE};
  usage_.check_room(device_bytes);
}

void Session::add(ObjectId id, ObjectKind kind, void* native, uint64_t device_bytes) {
  if (!objects_.insert(id, kind, native, device_bytes)) throw ClError{CL_INVALID_VALUE};
  usage_.add(device_bytes);
}

namespace {

cl_int release_native(ObjectKind kind, void* native) {
  switch (kind) {
    case ObjectKind::context: return clReleaseContext(static_cast<cl_context>(native));
    case ObjectKind::command_queue:  // after the clFinish calls made for it (completion.hpp)
      release_queue(static_cast<cl_command_queue>(native));
      return CL_SUCCESS;
    case ObjectKind::mem: return clReleaseMemObject(static_cast<cl_mem>(native));
    case ObjectKind::program: return clReleaseProgram(static_cast<cl_program>(native));
    case ObjectKind::kernel: return clReleaseKernel(static_cast<cl_kernel>(native));
    case ObjectKind::event: return clReleaseEvent(static_cast<cl_event>(native));
    case ObjectKind::sampler: return clReleaseSampler(static_cast<cl_sampler>(native));
    case ObjectKind::device: return clReleaseDevice(static_cast<cl_device_id>(native));  // a sub-device
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
    case ObjectKind::sampler: return 3;
    case ObjectKind::command_queue: return 4;
    case ObjectKind::context: return 5;
    case ObjectKind::device: return 6;  // sub-devices, after the contexts made with them
  }
  return 7;
}

}  // namespace

void Session::release(ObjectKind kind, ObjectId id) {
  const auto entry = objects_.erase(id, kind);
  if (!entry) {
    log::warn("release of unknown object ", id);
    return;
  }
  usage_.remove(entry->device_bytes);
  if (kind == ObjectKind::context) drop_staging(static_cast<cl_context>(entry->native));
  if (kind == ObjectKind::command_queue) queue_facts_.erase(static_cast<cl_command_queue>(entry->native));
  if (kind == ObjectKind::program) switchless_builds_.erase(static_cast<cl_program>(entry->native));
  release_native_object(kind, entry->native);
}

void Session::release_native_object(ObjectKind kind, void* native) {
  release_native(kind, native);
  if (kind != ObjectKind::mem) return;
  const auto svm = svm_allocations_.find(static_cast<cl_mem>(native));
  if (svm == svm_allocations_.end()) return;
  clSVMFree(svm->second.context, svm->second.base);
  svm_allocations_.erase(svm);
}

void Session::note_svm(cl_mem buffer, SvmAllocation allocation) { svm_allocations_.emplace(buffer, allocation); }

const Session::SvmAllocation* Session::svm_allocation(cl_mem buffer) const {
  const auto svm = svm_allocations_.find(buffer);
  return svm == svm_allocations_.end() ? nullptr : &svm->second;
}

void* Session::svm_address(const SvmAddress& address, cl_int invalid) const {
  const SvmAllocation* svm = svm_allocation(static_cast<cl_mem>(objects_.find(address.allocation, ObjectKind::mem)));
  if (!svm || address.offset > svm->size) throw ClError{invalid};
  return svm->base + address.offset;
}

uint64_t Session::max_bulk_bytes() const {
  cl_ulong largest = 0;
  for (const auto& device : server_.devices()) {
    cl_ulong size = 0;
    clGetDeviceInfo(device.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof size, &size, nullptr);
    largest = std::max(largest, size);
  }
  const uint64_t cap = server_.config().session_max_memory_bytes;
  return cap != 0 ? std::min<uint64_t>(largest, cap) : largest;
}

Session::Bulk Session::receive_bulk(uint64_t sequence, uint64_t size) {
  Bulk data;
  data.bytes = link_->lend_bulk(size);
  if (!data.bytes) {
    data.received.reset(new std::byte[size]);
    if (!link_->receive_bulk(sequence, data.received.get(), size, chunk_bytes())) throw ClError{peer_lost_status};
    data.bytes = data.received.get();
  }
  statistics_.count_to_proxy(size);
  return data;
}

void Session::drain_bulk(uint64_t sequence, uint64_t size) {
  // Received a chunk at a time into one scratch buffer, so a forged size costs no memory.
  Bytes scratch(std::min<uint64_t>(size, chunk_bytes()));
  for (uint64_t offset = 0; offset < size; offset += scratch.size()) {
    const size_t piece = std::min<uint64_t>(scratch.size(), size - offset);
    if (!link_->receive_bulk(sequence, scratch.data(), piece, piece)) return;
  }
}

std::unique_ptr<Session::Inbound> Session::next_request() {
  // Requests come in bursts: polling as long as the channel's reader does after a request
  // (Config::session_poll_spin) takes the next one without the cost of a wake-up, also the
  // first of a program's next round (a woken worker took 20-30 us more on the GPU machine).
  const auto waiting = [this] { return inbox_size_.load(std::memory_order_acquire) == 0 && !lost_; };
  if (waiting()) launch_gate_.end_burst();  // the client's burst of launches has ended, or pauses
  // While it polls, the worker takes the next request from a shared control channel into the
  // inbox itself (one hand-over fewer than through the channel's reader); while it runs one,
  // the reader decodes the next ones into the inbox.
  const auto arrived = [&] { return !waiting() || (link_->try_take_frame(), !waiting()); };
  worker_takes_.store(true, std::memory_order_release);
  // A run of detached reads comes a few microseconds apart: one that pauses longer has ended.
  if (read_reports_.any() && !transport::poll_for(arrived, ReadReports::grace)) read_reports_.send();
  if (!transport::poll_for(arrived, server_.config().session_poll_spin()))
    transport::poll_for([&] { return arrived() || !clients_waiting(); }, transport::longest_busy_poll);
  worker_takes_.store(false, std::memory_order_release);
  std::unique_lock lock(inbox_mutex_);
  // A client that connected but never said Hello is dropped once its token could no longer be
  // claimed. (The connect timeout was too short: under load a Hello came later, and the client
  // saw its connection refused.)
  const auto deadline = std::chrono::steady_clock::now() + server_.watchdog().claim_window();
  while (inbox_.empty() && !lost_) {
    if (greeted_) {
      inbox_cv_.wait(lock);
    } else if (inbox_cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox_.empty()) {
      log::warn("no Hello while its watchdog token could be claimed");
      return nullptr;
    }
  }
  if (lost_) return nullptr;
  std::unique_ptr<Inbound> request = std::move(inbox_.front());
  inbox_.pop_front();
  inbox_size_.fetch_sub(1, std::memory_order_relaxed);
  return request;
}

void Session::work() {
  const log::SessionScope scope(number_);
  while (!ending_) {
    const std::unique_ptr<Inbound> request = next_request();
    if (!request) break;
    request->run(*this);
  }
  teardown();
}

namespace {

template <class M>
void run_request(Session& session, uint64_t sequence, const typename M::Request& request,
                 std::vector<CallerWait>* caller_waits = nullptr) {
  Replier replier = session.replier(sequence);
  if constexpr (M::bulk == Bulk::to_proxy) {
    // No valid request carries more than one buffer's worth: a larger announcement would
    // keep this session draining data that no client sends.
    if (request.bulk_bytes() > session.max_bulk_bytes()) {
      log::warn("session ", session.number(), ": ", M::message_name, " announces ", request.bulk_bytes(),
                " bytes of data, more than any buffer can hold; closing");
      replier.reply<M>(CL_INVALID_BUFFER_SIZE);
      session.end();
      return;
    }
  }
  if (!session.greeted() && M::opcode != Opcode::Hello) {
    log::warn(M::message_name, " before Hello; closing");
    session.end();
    return;
  }
  log::trace(M::message_name, " #", sequence);
  if constexpr (M::opcode != Opcode::EnqueueNDRangeKernel) session.launch_gate().end_burst();
  // The run of such reads has ended (most sessions never have any: no call then).
  if (!reported_together(request) && session.read_reports().any()) session.read_reports().send();
  session.count_call();
  if constexpr (M::opcode == Opcode::Finish || M::opcode == Opcode::WaitForEvents) replier.owe();
  Call call{.session = session, .sequence = sequence, .caller_waits = caller_waits};
  cl_int status = CL_SUCCESS;
  try {
    if constexpr (replies_later<M>) {
      execute(call, request, replier);
      return;
    } else {
      auto reply = execute(call, request);
      if constexpr (M::has_reply)
        if (!answered_only_on_failure<M>(request, in_process(session))) replier.reply<M>(CL_SUCCESS, reply);
      return;
    }
  } catch (const ClError& error) {
    status = error.code;
  } catch (const std::bad_alloc&) {
    status = CL_OUT_OF_HOST_MEMORY;
  }
  if constexpr (M::bulk == Bulk::to_proxy)
    if (!call.bulk_consumed) session.drain_bulk(sequence, request.bulk_bytes());
  if constexpr (M::has_reply) replier.reply<M>(status);
}

template <class M>
struct DecodedRequest final : Session::Inbound {
  uint64_t sequence = 0;
  typename M::Request request;
  void run(Session& session) override { run_request<M>(session, sequence, request); }
};

// A request refused when its frame was decoded (unknown or malformed), answered in its turn
// unless its message has no reply.
struct RefusedRequest final : Session::Inbound {
  RefusedRequest(const FrameHeader& header, cl_int status, bool answered)
      : opcode(header.opcode), sequence(header.sequence), status(status), answered(answered) {}
  void run(Session& session) override {
    if (answered) session.replier(sequence).refuse(opcode, status);
  }
  Opcode opcode;
  uint64_t sequence;
  cl_int status;
  bool answered;
};

}  // namespace

std::unique_ptr<Session::Inbound> Session::decode_frame(const Bytes& frame) const {
  Reader reader(frame);
  FrameHeader header;
  if (!decode(reader, header) || header.magic != frame_magic || header.kind != FrameKind::request) {
    log::warn("session ", number_, ": dropped a frame without a valid header");
    return nullptr;
  }
  std::unique_ptr<Inbound> decoded;
  const bool known = visit_opcode(header.opcode, [&]<class M>() {
    auto request = std::make_unique<DecodedRequest<M>>();
    request->sequence = header.sequence;
    if (decode(reader, request->request) && reader.at_end()) {
      decoded = std::move(request);
    } else {
      log::warn("session ", number_, ": malformed ", M::message_name, " request");
      decoded = std::make_unique<RefusedRequest>(header, CL_INVALID_VALUE, M::has_reply);
    }
  });
  if (known) return decoded;
  log::warn("session ", number_, ": unknown opcode ", static_cast<unsigned>(header.opcode));
  return std::make_unique<RefusedRequest>(header, CL_INVALID_OPERATION, true);
}

void Session::run(Opcode opcode, uint64_t sequence, const void* request, std::vector<CallerWait>& waits) {
  const bool known = visit_opcode(opcode, [&]<class M>() {
    run_request<M>(*this, sequence, *static_cast<const typename M::Request*>(request), &waits);
  });
  if (!known) log::error("in-process request of unknown opcode ", static_cast<unsigned>(opcode));
}

std::shared_ptr<AttachedSegment> Session::shared_segment(const SharedRange& range) {
  if (!transport::moves_by_memory(data_path_->kind())) throw ClError{CL_INVALID_VALUE};
  return shared_segments_.get(client_pid_, range);
}

void Session::hold_user_event(cl_event event) {
  if (user_events_.insert(event).second) clRetainEvent(event);
}

void Session::teardown() {
  if (!lost_.exchange(true)) link_->forget_after_sending();  // it ended the session (Goodbye) itself
  server_.watchdog().release(number_);
  server_.peer_tickets().forget_session(number_);
  launch_gate_.end_burst();
  auto objects = objects_.take_all();
  queue_facts_.clear();
  for (cl_event event : user_events_) {
    clSetUserEventStatus(event, peer_lost_status);  // CL_INVALID_OPERATION if already set
    clReleaseEvent(event);
  }
  // Let running commands end before their objects go (their callbacks hold what they need).
  log::debug("finishing its queues");
  for (auto& [id, entry] : objects)
    if (entry.kind == ObjectKind::command_queue) clFinish(static_cast<cl_command_queue>(entry.native));
  log::debug("releasing its objects");
  // SVM allocations after the buffers, which may be made on their memory.
  const auto rank = [&](const HandleTable::Entry& entry) {
    const bool svm = entry.kind == ObjectKind::mem && svm_allocations_.contains(static_cast<cl_mem>(entry.native));
    return std::pair{teardown_rank(entry.kind), svm};
  };
  std::sort(objects.begin(), objects.end(), [&](const auto& a, const auto& b) { return rank(a.second) < rank(b.second); });
  for (auto& [id, entry] : objects) {
    release_native_object(entry.kind, entry.native);
    usage_.remove(entry.device_bytes);
  }
  for (auto& [context, ring] : staging_) give_back_ring(std::move(ring));
  staging_.clear();
  // What its kernels printed until their queues finished was theirs.
  OutputCapture::get().drain(link_.get());
  OutputCapture::get().leave(link_.get());
  log::info("disconnected: released ", objects.size(), " objects; holds ", usage_.objects(),
            " objects, ", usage_.memory_bytes(), " buffer bytes");
  // glibc keeps what the session's threads freed in their arenas; a shared proxy's memory
  // would otherwise ratchet up with every burst of clients.
  malloc_trim(0);
  finished_ = true;
}

// --- session-level executors -------------------------------------------------------

Hello::Reply execute(Call& call, const Hello::Request& request) {
  if (call.session.greeted()) throw ClError{CL_INVALID_OPERATION};
  if (request.version != protocol_version) {
    log::warn("refused a client speaking protocol ", request.version, ", not ",
              protocol_version);
    call.session.end();
    throw ClError{CL_INVALID_OPERATION};
  }
  // A session the watchdog started with this Hello holds its connection already, its data path chosen.
  const bool without_mpi = call.session.started_without_mpi();
  if (!without_mpi && !call.session.server().watchdog().claim(request.watchdog_token, call.session.number())) {
    log::warn("refused a Hello with an unknown watchdog token");
    call.session.end();
    throw ClError{CL_INVALID_OPERATION};
  }
  call.session.set_greeted(request.host, request.pid);
  log::info("connected: client ", request.host, " pid ", request.pid, without_mpi ? ", without MPI" : "");
  if (!without_mpi) call.session.choose_data_path(request);
  const bool shared_control = call.session.share_control(request);  // this reply goes there already
  return {.session = call.session.number(),
          .data_path = static_cast<uint8_t>(call.session.data_path().kind()),
          .chunk_bytes = call.session.chunk_bytes(),
          .max_message_bytes = call.session.server().config().max_message_bytes,
          .shared_control = shared_control};
}

Goodbye::Reply execute(Call& call, const Goodbye::Request&) {
  // The application is exiting: what its kernels printed, taken for it even where its programs do
  // not name printf (output_capture.hpp), goes ahead of this reply, which it waits for.
  call.session.drain_output_for_exit();
  call.session.end();
  return {};
}

Release::Reply execute(Call& call, const Release::Request& request) {
  call.session.release(request.kind, request.id);
  return {};
}

}  // namespace hivecl::proxy
