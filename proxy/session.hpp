// One client of the proxy: its MPI link, its table of objects, and a worker thread
// that executes its requests in order. The worker never waits for the device:
// commands whose reply depends on device progress (clFinish, clWaitForEvents, read
// data) are answered from native event callbacks through a Replier.
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cl_error.hpp"
#include "handle_table.hpp"
#include "protocol/messages.hpp"
#include "proxy/client_link.hpp"
#include "proxy/data_path.hpp"
#include "proxy/launch_gate.hpp"
#include "proxy/read_reports.hpp"
#include "proxy/shared_segments.hpp"
#include "proxy/staging.hpp"
#include "proxy/statistics.hpp"
#include "proxy/usage.hpp"
#include "proxy/waiting.hpp"

namespace hivecl::proxy {

class Server;

// What an in-process caller's thread waits for itself once its request has run and the
// session's lock is free (executors.hpp, Call::caller_waits), then the reply or status that
// follows; it takes `session_lock` again to touch the session.
using CallerWait = std::function<void(std::mutex& session_lock)>;

// Answers one request, from any thread; harmless once the client is gone.
class Replier {
 public:
  // For the request's run, while the session holds its link: a reference without a count (a
  // count taken for every request cost two locked instructions on the in-process path).
  Replier(ClientLink& link, uint64_t sequence) : link_(&link), sequence_(sequence) {}
  // A copy, kept to answer later (a native callback's), shares the link's ownership: the
  // session may be gone by then. (No move: a moved Replier is copied.)
  Replier(const Replier& other)
      : link_(other.link_),
        owner_(other.owner_ ? other.owner_ : other.link_->shared_from_this()),
        owed_(other.owed_),
        sequence_(other.sequence_) {}
  Replier& operator=(const Replier&) = delete;

  // Counts the request among those whose client waits (clients_waiting) until reply() is called.
  void owe();

  template <class M>
  void reply(cl_int status, const typename M::Reply& reply = {}) const {
    if (owed_) paid();
    if (link_->hand_reply(M::opcode, sequence_, status, status == CL_SUCCESS ? &reply : nullptr)) return;
    protocol::FrameHeader header{.opcode = M::opcode, .kind = protocol::FrameKind::reply, .sequence = sequence_,
                                 .status = status};
    protocol::Bytes frame;
    protocol::Writer writer(frame);
    protocol::encode(writer, header);
    if (status == CL_SUCCESS) protocol::encode(writer, reply);
    link_->send_frame(std::move(frame));
  }
  // Answers a request that could not be run (unknown or malformed) with `status` alone.
  void refuse(protocol::Opcode opcode, cl_int status) const;
  // Sends the status of a transfer to the client on this request's data tag, after its data.
  void send_status(cl_int status) const;
  uint64_t sequence() const { return sequence_; }

 private:
  static void paid();

  ClientLink* link_;
  ClientLinkPtr owner_;  // a copy's
  bool owed_ = false;
  uint64_t sequence_;
};

class Session {
 public:
  Session(uint32_t number, ClientLinkPtr link, Server& server);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  uint32_t number() const { return number_; }
  void start();
  // The in-process transport (in_process.cpp) runs requests in its callers' threads, one
  // at a time, instead of start()'s worker, and without encoding: `request` is message
  // `opcode`'s Request. The caller then waits for `waits` itself.
  void run(protocol::Opcode opcode, uint64_t sequence, const void* request, std::vector<CallerWait>& waits);
  // The link's thread (control channel reader or MPI engine), or the worker taking a frame
  // itself while it has nothing to run: a control frame arrived. It is decoded here, off the
  // worker's path while the worker runs a request (a stream of launches goes at its pace).
  void deliver(protocol::Bytes&& frame);
  // A request delivered, decoded, for the worker to run in its turn.
  struct Inbound {
    virtual ~Inbound() = default;
    virtual void run(Session& session) = 0;
  };
  // The client is gone (watchdog) or the proxy shuts down: stop and release everything.
  void lose();
  bool finished() const { return finished_.load(); }
  void count_call() { statistics_.count_call(); }
  SessionStatistics& statistics() { return statistics_; }
  protocol::SessionStatus status() const { return statistics_.snapshot(number_, usage_); }

  // --- for executors ---
  Server& server() { return server_; }
  Replier replier(uint64_t sequence) const;
  // What a command queue of the session is, noted at its creation: enqueues look it up instead of
  // asking the native runtime, which costs microseconds while NVIDIA's submits commands.
  struct QueueFacts {
    cl_context context = nullptr;
    cl_device_id device = nullptr;
    bool in_order = true;
    bool gated = false;  // the launch gate may hold its launches: in order, on a platform the gate covers
  };
  void note_queue(cl_command_queue queue, QueueFacts facts);  // sets `gated`
  QueueFacts facts_of(cl_command_queue queue) const;
  cl_device_id device(protocol::ObjectId id) const;
  cl_platform_id platform_of(protocol::ObjectId device_id) const;
  std::vector<cl_device_id> devices(const std::vector<protocol::ObjectId>& ids) const;
  // The native object of `id`, or ClError with the invalid-object code of T.
  template <class T>
  T get(protocol::ObjectId id) const;
  // The native events of `ids`; ClError(invalid) if one is unknown.
  std::vector<cl_event> events(const std::vector<protocol::ObjectId>& ids, cl_int invalid = CL_INVALID_EVENT_WAIT_LIST) const;
  // Throws CL_INVALID_VALUE unless `id` can name a new object, and the cap's error (usage.hpp)
  // unless the session may hold one more object of `device_bytes`.
  void check_fresh(protocol::ObjectId id, uint64_t device_bytes = 0) const;
  void add(protocol::ObjectId id, protocol::ObjectKind kind, void* native, uint64_t device_bytes = 0);
  const SessionUsage& usage() const { return usage_; }
  void release(protocol::ObjectKind kind, protocol::ObjectId id);
  // A request's bulk data, readable while its executor runs: the client's own memory where the
  // link lends it (in-process), else received into memory of the session's own.
  struct Bulk {
    std::unique_ptr<std::byte[]> received;
    const std::byte* bytes = nullptr;
  };
  // Receives the bulk data of a request; ClError(peer_lost_status) when the client vanishes.
  Bulk receive_bulk(uint64_t sequence, uint64_t size);
  void drain_bulk(uint64_t sequence, uint64_t size);
  // The most bulk data one request may carry: the largest buffer a device (and the session's cap) allows.
  uint64_t max_bulk_bytes() const;
  size_t chunk_bytes() const;
  void set_greeted(std::string client_host, int32_t client_pid);
  // The client made a program, one that may print or not (output_capture.hpp).
  void note_program(bool may_print);
  // The client is exiting: what its kernels printed goes to it now, an unfinished line too.
  void drain_output_for_exit();
  // A build or compile whose warning switches the native runtime did not get (build_warnings.hpp):
  // the application's options, and what its log reads.
  struct SwitchlessBuild {
    std::string options;
    bool warnings_hidden = false;         // the native log, without its warnings
    std::optional<std::string> failed_log;  // else: -Werror failed the build, with this log
  };
  // Notes `program`'s last build or compile: nothing where the runtime got the application's options.
  void note_build(cl_program program, std::optional<SwitchlessBuild> build);
  const SwitchlessBuild* switchless_build(cl_program program) const;
  // The native memory under each of the session's SVM allocations (SvmAlloc), keyed by the buffer
  // over it: freed when that buffer is released.
  struct SvmAllocation {
    cl_context context = nullptr;
    std::byte* base = nullptr;
    uint64_t size = 0;
  };
  void note_svm(cl_mem buffer, SvmAllocation allocation);
  // The SVM allocation under `buffer`, if it is one's buffer; null if not.
  const SvmAllocation* svm_allocation(cl_mem buffer) const;
  // The address `address.offset` bytes into the SVM allocation whose buffer is
  // `address.allocation` (its end included); ClError(invalid) unless it is one and the offset is in it.
  void* svm_address(const protocol::SvmAddress& address, cl_int invalid) const;
  // How bulk data moves to and from this client (MPI until Hello chooses).
  DataPath& data_path() { return *data_path_; }
  void choose_data_path(const protocol::Hello::Request& hello);
  // Takes the shared-memory control channel the client offered, if the data path is memory.
  bool share_control(const protocol::Hello::Request& hello);
  // The watchdog started it with the client's Hello (Server::start_session_without_mpi).
  bool started_without_mpi() const { return link_->started_without_mpi(); }
  // The client's shared segment of `range` (memory data path only; ClError otherwise).
  std::shared_ptr<AttachedSegment> shared_segment(const protocol::SharedRange& range);
  void forget_shared_segment(uint64_t segment) { shared_segments_.forget(segment); }
  void set_data_path(std::unique_ptr<DataPath> path) { data_path_ = std::move(path); }
  // The staging ring of a native context, made at its first transfer.
  StagingRing& staging(cl_context context, cl_device_id device);
  bool greeted() const { return greeted_; }
  void end() { ending_ = true; }
  LaunchGate& launch_gate() { return launch_gate_; }
  // The worker's own: reports of detached reads, sent when a run of them ends.
  ReadReports& read_reports() { return read_reports_; }
  // A user event of this session: failed at teardown if the client never set it, so that the
  // commands waiting for it end (even after the client released it).
  void hold_user_event(cl_event event);
  const std::unordered_set<cl_event>& user_events() const { return user_events_; }

 private:
  void work();
  std::unique_ptr<Inbound> decode_frame(const protocol::Bytes& frame) const;
  std::unique_ptr<Inbound> next_request();
  void teardown();
  void drop_staging(cl_context context);
  void release_native_object(protocol::ObjectKind kind, void* native);  // with an SVM buffer's allocation
  bool launch_gate_covers(cl_device_id device) const;  // the gate is on, for the device's platform

  const uint32_t number_;
  ClientLinkPtr link_;
  Server& server_;
  HandleTable objects_;
  SessionUsage usage_;
  SessionStatistics statistics_;
  std::unordered_set<cl_event> user_events_;  // retained; the worker thread's only
  std::unordered_map<cl_command_queue, QueueFacts> queue_facts_;  // as objects_, the worker's only
  std::unordered_map<cl_program, SwitchlessBuild> switchless_builds_;
  std::unordered_map<cl_mem, SvmAllocation> svm_allocations_;
  LaunchGate launch_gate_;
  ReadReports read_reports_;
  std::thread worker_;
  std::mutex inbox_mutex_;
  std::condition_variable inbox_cv_;
  std::deque<std::unique_ptr<Inbound>> inbox_;
  std::atomic<size_t> inbox_size_{0};  // read without the lock while spinning
  std::atomic<bool> worker_takes_{false};  // the worker polls the link for requests (try_take_frame)
  std::atomic<bool> lost_{false};
  std::atomic<bool> finished_{false};
  bool greeted_ = false;
  bool ending_ = false;
  std::unique_ptr<DataPath> data_path_;
  int32_t client_pid_ = 0;
  SharedSegments shared_segments_;
  std::mutex staging_mutex_;
  std::map<cl_context, std::unique_ptr<StagingRing>> staging_;
};

template <class T>
struct NativeKind;
template <> struct NativeKind<cl_context> { static constexpr auto kind = protocol::ObjectKind::context; static constexpr cl_int invalid = CL_INVALID_CONTEXT; };
template <> struct NativeKind<cl_command_queue> { static constexpr auto kind = protocol::ObjectKind::command_queue; static constexpr cl_int invalid = CL_INVALID_COMMAND_QUEUE; };
template <> struct NativeKind<cl_mem> { static constexpr auto kind = protocol::ObjectKind::mem; static constexpr cl_int invalid = CL_INVALID_MEM_OBJECT; };
template <> struct NativeKind<cl_program> { static constexpr auto kind = protocol::ObjectKind::program; static constexpr cl_int invalid = CL_INVALID_PROGRAM; };
template <> struct NativeKind<cl_kernel> { static constexpr auto kind = protocol::ObjectKind::kernel; static constexpr cl_int invalid = CL_INVALID_KERNEL; };
template <> struct NativeKind<cl_event> { static constexpr auto kind = protocol::ObjectKind::event; static constexpr cl_int invalid = CL_INVALID_EVENT; };
template <> struct NativeKind<cl_sampler> { static constexpr auto kind = protocol::ObjectKind::sampler; static constexpr cl_int invalid = CL_INVALID_SAMPLER; };

template <class T>
T Session::get(protocol::ObjectId id) const {
  void* native = objects_.find(id, NativeKind<T>::kind);
  if (!native) throw ClError{NativeKind<T>::invalid};
  return static_cast<T>(native);
}

}  // namespace hivecl::proxy
