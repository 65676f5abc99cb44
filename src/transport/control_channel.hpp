// Control frames between a client and a proxy on one node, through memory both processes
// map (a SharedSegment) instead of MPI: between separately launched jobs Open MPI runs over
// TCP loopback (about 13 µs per round trip, ENVIRONMENT.md), while a ring in shared memory
// with a reader that polls takes well under a microsecond each way. The watchdog keeps
// telling when the peer is gone. A session whose data moves through memory needs no MPI at
// all: its channel is named in the Hello that goes with the watchdog's admission
// (transport/watchdog.hpp); otherwise MPI keeps the connection and the bulk data.
//
// Each direction is a ring of bytes carrying length-prefixed frames, with one producing
// process (its threads take turns) and one consuming process, whose threads take turns too:
// the channel's reader, and a thread that polls for what a frame will bring it (a reply, a
// request) and takes frames itself meanwhile (ControlChannel::try_take), which saves the
// hand-over from the reader (docs/PERFORMANCE.md). Neither side trusts the counters the other
// writes: a count that could not be true ends the channel (broken), and every frame is copied
// out before anyone decodes it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "protocol/codec.hpp"
#include "transport/shared_segment.hpp"

namespace hivecl::transport {

// One direction of a channel, over memory that both processes map. Its consumer calls are
// made by one thread at a time (ControlChannel's consumer lock), except taken() and
// wait_readable().
class ControlRing {
 public:
  enum class Result { done, closed, broken };
  static constexpr size_t header_bytes = 256;

  // `memory` holds header_bytes + capacity bytes, zeroed by the process that made it.
  ControlRing(std::byte* memory, size_t capacity);
  ControlRing(const ControlRing&) = delete;
  ControlRing& operator=(const ControlRing&) = delete;

  // Producer: appends one frame, waiting for room while the consumer lags (a frame larger
  // than the ring goes in pieces). closed: `closed` was set; broken: the consumer's count is impossible.
  Result write(std::span<const std::byte> frame, const std::atomic<bool>& closed);
  // Consumer: the next frame, of at most `max_frame` bytes; polls for `spin` after the last
  // frame, then sleeps until one comes or `closed` is set.
  Result read(protocol::Bytes& frame, uint64_t max_frame, std::chrono::microseconds spin,
              const std::atomic<bool>& closed);
  // Consumer: waits as read() does until some bytes are readable (or the counts look impossible).
  Result wait_readable(std::chrono::microseconds spin, const std::atomic<bool>& closed);
  // Consumer, without waiting: copies the next frame into `frame` if all of it is readable,
  // leaving it in the ring until skip(). incomplete: not all of it is there yet (a frame larger
  // than the ring comes in pieces: read() takes it); broken: as read() would find.
  enum class Peeked { frame, incomplete, broken };
  Peeked peek(protocol::Bytes& frame, uint64_t max_frame) const;
  // Consumer: takes the frame that peek() copied, of `size` bytes.
  void skip(size_t size);
  // How many bytes consumers have taken so far (any thread).
  uint64_t taken() const { return read_.load(std::memory_order_acquire); }
  // Consumer: while `expecting()` says an answer is due, read() polls up to longest_busy_poll
  // (transport/polling.hpp) before it sleeps. Set before reading starts.
  void poll_while(std::function<bool()> expecting) { expecting_ = std::move(expecting); }
  // Wakes this process's thread waiting in read() or write(), to see `closed`.
  void wake();

 private:
  struct Header;
  // Waits until `ready` or `closed`: polls until `spin_until` (or, given `expecting`, while it
  // says so, up to longest_busy_poll), then sleeps on `signal` with `sleeping` raised, so the
  // other side knows to wake it.
  Result wait(const std::function<bool()>& ready, uint32_t& signal, uint32_t& sleeping,
              std::chrono::steady_clock::time_point spin_until, const std::atomic<bool>& closed,
              const std::function<bool()>* expecting = nullptr);
  // Consumer: waits until some bytes are readable (as wait() does, with the consumer's signal).
  Result wait_for_data(std::chrono::steady_clock::time_point spin_until, const std::atomic<bool>& closed);
  // Consumer: the next `size` bytes of the stream.
  Result take(std::byte* into, size_t size, std::chrono::steady_clock::time_point spin_until,
              const std::atomic<bool>& closed);
  // Consumer: copies `size` bytes from `at` bytes past the read count, which must be readable.
  void copy_out(std::byte* into, uint64_t at, size_t size) const;
  // Producer: copies `bytes` in at the written count (room checked by the caller).
  void put(std::span<const std::byte> bytes);
  // The bytes the producer has published and the consumer not yet read; SIZE_MAX if impossible.
  size_t readable() const;
  size_t room() const;
  void publish_written();
  void publish_read();

  Header& header_;
  std::byte* data_;
  size_t capacity_;
  uint64_t written_ = 0;  // this process's own counts: never read back from shared memory
  std::atomic<uint64_t> read_ = 0;  // changed by one consumer at a time, looked at by others
  std::mutex write_mutex_;
  std::function<bool()> expecting_;
};

// Both directions, and the thread that reads the incoming one.
class ControlChannel {
 public:
  // Runs with the consumers' lock held (in the reader or a taker): it must not wait for
  // another frame of this channel.
  using OnFrame = std::function<void(protocol::Bytes&& frame)>;
  static constexpr size_t default_capacity = 256u << 10;
  static constexpr std::chrono::microseconds taker_grace{10};
  static constexpr const char* memfd_name = "hivecl-control";

  // Client: a new channel's memory, rings of `capacity` bytes; null if the system offers none.
  static std::unique_ptr<ControlChannel> create(size_t capacity = default_capacity);
  // Proxy: the channel the client `owner` made, open as its descriptor `fd` (inode and size as
  // it said); null if that is not such a file.
  static std::unique_ptr<ControlChannel> attach(pid_t owner, int fd, uint64_t inode, uint64_t size);
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;
  ~ControlChannel();

  const SharedSegment& segment() const { return *segment_; }
  // Starts the thread that hands each incoming frame to `on_frame`; `on_broken` runs in it if the
  // peer broke the ring (a frame over `max_frame`, an impossible count), after which it reads no more.
  // `expecting` (optional): whether an answer is due, polled for without sleeping (ControlRing::poll_while).
  // `takers` (optional): while it says that some thread polls try_take(), the reader leaves
  // each frame to it for up to taker_grace (the taker may have been descheduled).
  void listen(OnFrame on_frame, std::function<void()> on_broken, uint64_t max_frame, std::chrono::microseconds spin,
              std::function<bool()> expecting = {}, std::function<bool()> takers = {});
  // Any thread, without waiting: if no other thread is taking one and all of the next frame
  // is there, takes it and hands it to on_frame in this thread, as the reader would (frames
  // are handed on one at a time, in order); whether it did.
  bool try_take();
  // Any thread; false once the channel is closed or broken.
  bool send(std::span<const std::byte> frame);
  // Ends sending and reading in this process; the reader stops soon after.
  void close();
  // close(), then waits for the reader to stop (unless called by the reader itself, from
  // on_frame or on_broken) and for a taker handing a frame on: no frame is handed on after it
  // returns. (A taker's on_frame must not call it.)
  void stop();

 private:
  enum class Side { client, proxy };
  ControlChannel(std::unique_ptr<SharedSegment> segment, size_t capacity, Side side);
  static size_t capacity_of(uint64_t segment_size);
  void read_loop(const std::function<void()>& on_broken, std::chrono::microseconds spin,
                 const std::function<bool()>& takers);

  std::unique_ptr<SharedSegment> segment_;
  std::unique_ptr<ControlRing> outgoing_;
  std::unique_ptr<ControlRing> incoming_;
  std::atomic<bool> closed_{false};
  OnFrame on_frame_;  // listen()'s
  uint64_t max_frame_ = 0;
  std::mutex consumer_mutex_;  // held by the thread taking a frame and handing it on
  std::mutex reader_mutex_;  // one thread joins the reader
  std::thread reader_;
  std::atomic<std::thread::id> reader_id_;
};

}  // namespace hivecl::transport
