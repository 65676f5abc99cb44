// How the proxy learns that a native command reached a status. Completion of a command of
// an in-order queue is waited for by a thread of that queue with clWaitForEvents: NVIDIA's
// runtime runs CL_COMPLETE callbacks up to ~17 ms late for commands of a few MiB (9 µs
// for clWaitForEvents against 50 µs by callback for a 4 KiB read, 0.17 ms against 17 ms
// for 8 MiB: docs/FINDINGS.md), which cost every pipelined transfer one such delay per
// chunk. Completions of commands of a queue that may be held back by a user event
// (note_wait_list) are polled by one thread of their own; other statuses, user events and
// out-of-order queues keep native callbacks.
#pragma once

#include <CL/cl.h>

#include <functional>
#include <unordered_set>
#include <vector>

namespace hivecl::proxy {

// Whether `queue` runs its commands in order (false if it cannot be asked).
bool is_in_order(cl_command_queue queue);
// Notes that a command about to be enqueued on `queue` waits for `waits`. Where one of them may
// be held back indefinitely (one of `user_events`, or a command of a queue itself so held), every
// command of `queue` from now on may be: until those events end, completions of the queue's
// commands are polled for, not waited for by its waiter thread, which waits for them in turn and
// would make a wait for an earlier command wait for the held one too.
// Where none is a user event and no queue is held, it asks the native runtime nothing (an event
// query while NVIDIA's runtime submits cost the Triad-like stream 2 µs each).
void note_wait_list(cl_command_queue queue, const std::vector<cl_event>& waits,
                    const std::unordered_set<cl_event>& user_events);
// Whether a command enqueued on `queue` now may be held back indefinitely (note_wait_list).
bool may_be_held(cl_command_queue queue);
// Runs `action` once `event` reaches `status` (CL_SUBMITTED, CL_RUNNING, CL_COMPLETE) or
// fails, with the status reached (negative on failure): at once in the caller's thread if
// the command has already ended, otherwise later in another thread; the event is retained
// until then.
void when_status(cl_event event, cl_int status, std::function<void(cl_int status)> action);
inline void when_complete(cl_event event, std::function<void(cl_int status)> action) {
  when_status(event, CL_COMPLETE, std::move(action));
}
// As when_complete, for the event of a command just enqueued on `queue`, whose order the caller
// knows: the native runtime is asked nothing (each question cost microseconds while NVIDIA's
// runtime submits). The command is flushed unless the queue's waiter thread waits for it (its
// clWaitForEvents flushes).
void when_enqueued_complete(cl_command_queue queue, bool in_order, cl_event event,
                            std::function<void(cl_int status)> action);
// A wait on `queue` (its clFinish) is likely soon, as after a launch: its waiter thread, if it
// sleeps, wakes to poll, so that the wait costs no wake-up then (46 µs on the GPU machine).
void expect_wait(cl_command_queue queue);
// Runs `action` with the status of a native clFinish of `queue`, made in another thread once
// the commands of the queue that are already waited for have been (their actions first).
// The queue is not retained for it (a retain and release cost as much as a clFinish on
// NVIDIA, docs/FINDINGS.md): release it with release_queue().
void when_finished(cl_command_queue queue, std::function<void(cl_int status)> action);
// Releases `queue` (clReleaseCommandQueue) once what its waiter thread was given has been done.
void release_queue(cl_command_queue queue);
// Waits in the calling thread for `event` to complete or fail, then runs `action` with the
// status reached, as when_complete would.
void wait_then(cl_event event, const std::function<void(cl_int status)>& action);

}  // namespace hivecl::proxy
