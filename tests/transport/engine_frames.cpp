// The engine's control frames between two real MPI processes (mpirun -np 2): rank 0 sends
// raw frames as any peer could, rank 1 listens with an Engine whose max_message_bytes is
// 64 KiB, as a proxy does. Frames must reach the listener whole and in the order sent, a
// frame over the limit must be dropped, and the listener's process must live on: Open MPI
// 4.1's UCX PML crashed it on the truncated receive (docs/FINDINGS.md).
// Then, on a second link whose listener polls only when asked (as a client's): a message on a
// data tag received with receive_after_frames must end after the control frames sent before
// it reached the listener, although MPI orders them per tag only and nothing asked for them.
// Then, on a third link, rank 1 sends frames and at once forgets the link after its sends (as a
// proxy does when its client said Goodbye): rank 0 must receive every one.
// Exit status 0 when each side saw exactly the expected frames, in that order.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/engine.hpp"
#include "transport/mpi_defaults.hpp"
#include "transport/tags.hpp"

namespace {

using hivecl::protocol::Bytes;
namespace transport = hivecl::transport;

constexpr uint64_t listener_limit = 64 << 10;

Bytes frame_of(size_t size, unsigned seed) {
  Bytes frame(size);
  for (size_t i = 0; i < size; ++i) frame[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return frame;
}

// In the order sent; the one over the limit is not expected back.
struct Sent {
  size_t size;
  unsigned seed;
};
constexpr Sent frames[] = {{16, 1}, {60000, 2}, {24, 3}, {300000, 4}, {40, 5}, {2000000, 6}, {8, 7}};

bool over_limit(const Sent& sent) { return sent.size > listener_limit; }

void send_frames(MPI_Comm peer) {
  for (const Sent& sent : frames) {
    Bytes frame = frame_of(sent.size, sent.seed);
    MPI_Send(frame.data(), static_cast<int>(frame.size()), MPI_BYTE, 0, transport::control_tag, peer);
  }
}

int receive_frames(MPI_Comm peer) {
  transport::Engine engine;
  engine.start({.max_message_bytes = listener_limit});
  engine.wait_started();
  auto link = std::make_shared<transport::Link>(peer);
  std::mutex mutex;
  std::vector<Bytes> received;
  engine.listen(link, transport::control_tag, true, [&](Bytes&& frame) {
    std::lock_guard lock(mutex);
    received.push_back(std::move(frame));
  });
  std::vector<Bytes> expected;
  for (const Sent& sent : frames)
    if (!over_limit(sent)) expected.push_back(frame_of(sent.size, sent.seed));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (received.size() >= expected.size()) break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine.stop();
  std::lock_guard lock(mutex);
  std::printf("engine-frames: %zu frames received, %zu expected\n", received.size(), expected.size());
  if (received != expected) {
    std::printf("engine-frames: the frames received are not the frames sent under the limit, in order\n");
    return 1;
  }
  return 0;
}

constexpr int ordered_frames = 3;
const int trailer_tag = transport::data_tag(7);

void send_frames_then_trailer(MPI_Comm peer) {
  for (unsigned seed = 0; seed < ordered_frames; ++seed) {
    Bytes frame = frame_of(32, seed);
    MPI_Send(frame.data(), static_cast<int>(frame.size()), MPI_BYTE, 0, transport::control_tag, peer);
  }
  const int32_t trailer = 0;
  MPI_Send(&trailer, sizeof trailer, MPI_BYTE, 0, trailer_tag, peer);
}

int receive_frames_then_trailer(MPI_Comm peer) {
  transport::Engine engine;
  engine.start({});
  engine.wait_started();
  auto link = std::make_shared<transport::Link>(peer);
  std::mutex mutex;
  std::vector<char> events;  // 'f': a frame delivered, 't': the trailer's receive ended
  engine.listen(link, transport::control_tag, false, [&](Bytes&&) {
    std::lock_guard lock(mutex);
    events.push_back('f');
  });
  int32_t trailer = -1;
  engine.receive_after_frames(link, trailer_tag, &trailer, sizeof trailer, [&](transport::OpStatus, Bytes&&) {
    std::lock_guard lock(mutex);
    events.push_back('t');
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (!events.empty() && events.back() == 't') break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine.stop();
  std::lock_guard lock(mutex);
  const std::vector<char> expected{'f', 'f', 'f', 't'};
  std::printf("engine-frames: %zu events after the frames and the trailer\n", events.size());
  if (events != expected) {
    std::printf("engine-frames: the trailer's receive did not end after the %d frames sent before it\n",
                ordered_frames);
    return 1;
  }
  return 0;
}

constexpr int last_frames = 4;

// Rank 1: the frames, then the link forgotten after them, before the engine has begun them.
int send_then_forget(MPI_Comm peer) {
  transport::Engine engine;
  engine.start({});
  engine.wait_started();
  auto link = std::make_shared<transport::Link>(peer);
  for (int seed = 0; seed < last_frames; ++seed)
    engine.send(link, transport::control_tag, frame_of(size_t{64} << (4 * seed), static_cast<unsigned>(seed)));
  engine.forget_after_sends(link);
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has them all, or has given up
  engine.stop();
  return 0;
}

int receive_last_frames(MPI_Comm peer) {
  int received = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (; received < last_frames; ++received) {
    Bytes frame(size_t{64} << (4 * received));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Irecv(frame.data(), static_cast<int>(frame.size()), MPI_BYTE, 0, transport::control_tag, peer, &request);
    int done = 0;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!done) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
      break;
    }
    if (frame != frame_of(frame.size(), static_cast<unsigned>(received))) break;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::printf("engine-frames: %d of the %d frames sent before the link was forgotten received\n", received,
              last_frames);
  return received == last_frames ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& [variable, value] : transport::mpi_defaults) setenv(variable, value, 0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || provided != MPI_THREAD_MULTIPLE) {
    std::printf("engine-frames: needs 2 processes and MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // An intercommunicator whose remote group is the other process, as a proxy's link is.
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm peer = MPI_COMM_NULL;
  MPI_Comm second_peer = MPI_COMM_NULL;
  MPI_Comm third_peer = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &own);
  MPI_Intercomm_create(own, 0, MPI_COMM_WORLD, 1 - rank, 0, &peer);
  MPI_Intercomm_create(own, 0, MPI_COMM_WORLD, 1 - rank, 1, &second_peer);
  MPI_Intercomm_create(own, 0, MPI_COMM_WORLD, 1 - rank, 2, &third_peer);
  MPI_Comm_set_errhandler(peer, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(second_peer, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(third_peer, MPI_ERRORS_RETURN);
  int status = 0;
  if (rank == 0) {
    send_frames(peer);
    send_frames_then_trailer(second_peer);
    status = receive_last_frames(third_peer);
    MPI_Comm_free(&peer);
    MPI_Comm_free(&second_peer);
    MPI_Comm_free(&third_peer);
  } else {
    // In the order rank 0 sends; each engine frees its link's communicator when it stops.
    status = receive_frames(peer);
    status = std::max(status, receive_frames_then_trailer(second_peer));
    status = std::max(status, send_then_forget(third_peer));
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&own);
  MPI_Finalize();
  return worst;
}
