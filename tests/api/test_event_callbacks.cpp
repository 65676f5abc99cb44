// User events and event callbacks, natively and through HiveCL.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t count = 1 << 16;
constexpr size_t bytes = count * sizeof(cl_int);

Buffer filled_buffer(const Setup& setup, cl_int value) {
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(setup.context, CL_MEM_READ_WRITE, bytes, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clEnqueueFillBuffer(setup.queue, buffer, &value, sizeof value, 0, bytes, 0, nullptr, nullptr) ==
          CL_SUCCESS);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
  return buffer;
}

// What one event callback saw; the test waits for it before leaving.
struct Seen {
  std::atomic<int> calls{0};
  std::atomic<cl_int> status{1};
  std::atomic<bool> on_application_thread{false};
  std::atomic<bool> data_in_place{false};
  std::thread::id application_thread = std::this_thread::get_id();
  const std::vector<cl_int>* data = nullptr;  // for a read: what must be in host memory by then
  cl_int expected = 0;
};

void CL_CALLBACK note_callback(cl_event, cl_int status, void* user_data) {
  auto* seen = static_cast<Seen*>(user_data);
  seen->status = status;
  seen->on_application_thread = std::this_thread::get_id() == seen->application_thread;
  if (seen->data)
    seen->data_in_place =
        std::all_of(seen->data->begin(), seen->data->end(), [&](cl_int v) { return v == seen->expected; });
  seen->calls.fetch_add(1);
}

// Waits (boundedly) for callbacks, then a little longer, so that a second call would be seen.
void wait_for_calls(const std::vector<Seen*>& seen) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(seen.begin(), seen.end(), [](const Seen* s) { return s->calls.load() == 0; }))
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(100ms);
}

// Native runtimes may call a callback from the call that reached its status (PoCL does, from
// clSetUserEventStatus and clSetEventCallback); HiveCL always calls it from a thread of its own.
void record_seen(Probe& probe, const std::string& what, const Seen& seen) {
  probe.value(what + " calls", seen.calls.load());
  probe.record(what + " status", status_name(seen.status.load()));
  if (probe.hivecl()) CHECK_FALSE(seen.on_application_thread.load());
}

}  // namespace

DIFFERENTIAL_TEST(user_events, "user events gate the commands that wait for them and take one status",
                  "[event][user-event]") {
  Setup setup = make_setup(probe);
  Buffer buffer = filled_buffer(setup, 0);
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  probe.status("clCreateUserEvent", status);
  REQUIRE(status == CL_SUCCESS);
  cl_command_type type = 0;
  probe.status("command type status", clGetEventInfo(gate, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
  probe.value("is a user command", type == CL_COMMAND_USER);
  cl_command_queue queue = nullptr;
  probe.status("queue status", clGetEventInfo(gate, CL_EVENT_COMMAND_QUEUE, sizeof queue, &queue, nullptr));
  probe.value("has no queue", queue == nullptr);
  cl_context context = nullptr;
  clGetEventInfo(gate, CL_EVENT_CONTEXT, sizeof context, &context, nullptr);
  probe.value("its context", context == setup.context.get());
  probe.record("status before", status_name(execution_status(gate)));

  // A write that waits for the gate does not happen before it opens.
  const std::vector<cl_int> ones(count, 1);
  Event written;
  REQUIRE(clEnqueueWriteBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, ones.data(), 1, gate.out(), written.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  std::this_thread::sleep_for(50ms);
  probe.value("write waits for the gate", execution_status(written) != CL_COMPLETE);

  probe.status("positive status", clSetUserEventStatus(gate, 5));
  probe.status("open the gate", clSetUserEventStatus(gate, CL_COMPLETE));
  probe.status("a second status", clSetUserEventStatus(gate, CL_COMPLETE));
  probe.status("wait for the write", clWaitForEvents(1, written.out()));
  probe.record("status after", status_name(execution_status(gate)));
  std::vector<cl_int> data(count);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, 0, bytes, data.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  probe.value("written after the gate", data == ones);

  Event marked;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, marked.out()) == CL_SUCCESS);
  probe.status("status of a command's event", clSetUserEventStatus(marked, CL_COMPLETE));
  probe.status("no event", clSetUserEventStatus(nullptr, CL_COMPLETE));
  status = CL_SUCCESS;
  probe.value("no context gives no event", clCreateUserEvent(nullptr, &status) == nullptr);
  probe.status("no context", status);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
}

DIFFERENTIAL_TEST(failed_user_event, "a user event set to an error fails the commands that wait for it",
                  "[event][user-event]") {
  Setup setup = make_setup(probe);
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  Event marked;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 1, gate.out(), marked.out()) == CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  probe.status("fail the gate", clSetUserEventStatus(gate, -1));
  probe.record("gate status", status_name(execution_status(gate)));
  probe.status("wait for the gate", clWaitForEvents(1, gate.out()));
  probe.status("wait for the marker", clWaitForEvents(1, marked.out()));
  probe.value("marker failed", execution_status(marked) < 0);
}

DIFFERENTIAL_TEST(event_callbacks, "event callbacks run once, off the application's thread, after their status",
                  "[event][callback]") {
  Setup setup = make_setup(probe);
  Buffer buffer = filled_buffer(setup, 7);
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  std::vector<cl_int> data(count, 0);
  Event read;
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, data.data(), 1, gate.out(), read.out()) ==
          CL_SUCCESS);
  Seen submitted, running, complete, gate_complete;
  complete.data = &data;
  complete.expected = 7;
  probe.status("on submitted", clSetEventCallback(read, CL_SUBMITTED, note_callback, &submitted));
  probe.status("on running", clSetEventCallback(read, CL_RUNNING, note_callback, &running));
  probe.status("on complete", clSetEventCallback(read, CL_COMPLETE, note_callback, &complete));
  probe.status("on the gate", clSetEventCallback(gate, CL_COMPLETE, note_callback, &gate_complete));
  probe.value("nothing called before the gate opens", complete.calls.load() + gate_complete.calls.load());
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
  wait_for_calls({&submitted, &running, &complete, &gate_complete});
  record_seen(probe, "submitted", submitted);
  record_seen(probe, "running", running);
  record_seen(probe, "complete", complete);
  record_seen(probe, "gate", gate_complete);
  probe.value("read data in place at the callback", complete.data_in_place.load());

  // On an event that has already completed: called all the same, once.
  Seen late;
  probe.status("on a completed event", clSetEventCallback(read, CL_COMPLETE, note_callback, &late));
  wait_for_calls({&late});
  record_seen(probe, "late", late);

  probe.status("unknown status", clSetEventCallback(read, CL_QUEUED, note_callback, &late));
  probe.status("no function", clSetEventCallback(read, CL_COMPLETE, nullptr, &late));
  probe.status("no event", clSetEventCallback(nullptr, CL_COMPLETE, note_callback, &late));
}

DIFFERENTIAL_TEST(write_behind_held_read, "a write waits for no earlier read into other memory held by a user event",
                  "[event][user-event]") {
  Setup setup = make_setup(probe);
  Buffer source = filled_buffer(setup, 7);
  Buffer target = filled_buffer(setup, 0);
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  std::vector<cl_int> read_back(count, 0);
  const std::vector<cl_int> written(count, 5);
  REQUIRE(clEnqueueReadBuffer(setup.queue, source, CL_FALSE, 0, bytes, read_back.data(), 1, gate.out(), nullptr) ==
          CL_SUCCESS);
  // HiveCL takes a write's data when it is enqueued, after the reads that fill that memory; a
  // read into other memory, held until the gate opens, must not hold the write (it did).
  probe.status("write behind the held read",
               clEnqueueWriteBuffer(setup.queue, target, CL_FALSE, 0, bytes, written.data(), 0, nullptr, nullptr));
  probe.status("open the gate", clSetUserEventStatus(gate, CL_COMPLETE));
  probe.status("finish", clFinish(setup.queue));
  probe.value("read data", read_back == std::vector<cl_int>(count, 7));
  std::vector<cl_int> target_data(count, 0);
  REQUIRE(clEnqueueReadBuffer(setup.queue, target, CL_TRUE, 0, bytes, target_data.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  probe.value("written data", target_data == written);
}
