#include "transport/control_channel.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "transport/polling.hpp"

namespace hivecl::transport {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Plain fields that both processes reach through std::atomic_ref; the futex words are shared
// (no FUTEX_PRIVATE_FLAG), so a sleeper in one process is woken from the other.
struct ControlRing::Header {
  alignas(64) uint64_t written;  // bytes the producer has published, since the start
  uint32_t data_signal;          // bumped to wake a sleeping consumer
  uint32_t consumer_sleeping;
  alignas(64) uint64_t read;  // bytes the consumer has taken
  uint32_t room_signal;       // bumped to wake a producer waiting for room
  uint32_t producer_sleeping;
};
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free && std::atomic_ref<uint32_t>::is_always_lock_free);

namespace {

template <class T>
std::atomic_ref<T> shared(T& field) {
  return std::atomic_ref<T>(field);
}

// A sleeper checks again this often even if nobody wakes it (a peer that died mid-write).
constexpr auto longest_sleep = 50ms;

void futex_wait(uint32_t& word, uint32_t expected) {
  const timespec timeout{0, std::chrono::nanoseconds(longest_sleep).count()};
  syscall(SYS_futex, &word, FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futex_wake(uint32_t& word) { syscall(SYS_futex, &word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

void notify(uint32_t& signal, uint32_t& sleeping) {
  if (shared(sleeping).load() == 0) return;
  shared(signal).fetch_add(1);
  futex_wake(signal);
}

}  // namespace

ControlRing::ControlRing(std::byte* memory, size_t capacity)
    : header_(*reinterpret_cast<Header*>(memory)), data_(memory + header_bytes), capacity_(capacity) {
  static_assert(sizeof(Header) <= header_bytes);
  written_ = shared(header_.written).load();  // zero in a new ring; a ring is used by one pair
  read_ = shared(header_.read).load();
}

size_t ControlRing::readable() const {
  const uint64_t read = read_.load(std::memory_order_acquire);  // first: a count read later is never below it
  const uint64_t available = shared(header_.written).load(std::memory_order_acquire) - read;
  return available > capacity_ ? SIZE_MAX : available;
}

size_t ControlRing::room() const {
  const uint64_t used = written_ - shared(header_.read).load(std::memory_order_acquire);
  return used > capacity_ ? SIZE_MAX : capacity_ - used;
}

void ControlRing::publish_written() {
  shared(header_.written).store(written_);
  notify(header_.data_signal, header_.consumer_sleeping);
}

void ControlRing::publish_read() {
  shared(header_.read).store(read_);
  notify(header_.room_signal, header_.producer_sleeping);
}

ControlRing::Result ControlRing::wait(const std::function<bool()>& ready, uint32_t& signal, uint32_t& sleeping,
                                      Clock::time_point spin_until, const std::atomic<bool>& closed,
                                      const std::function<bool()>* expecting) {
  const Clock::time_point busy_until = Clock::now() + longest_busy_poll;
  while (true) {
    if (closed.load(std::memory_order_acquire)) return Result::closed;
    if (ready()) return Result::done;
    const Clock::time_point now = Clock::now();
    if (now < spin_until || (expecting && *expecting && now < busy_until && (*expecting)())) {
      sched_yield();
      continue;
    }
    // Raised before the last look: a producer that publishes after it sees the flag (both seq_cst).
    const uint32_t seen = shared(signal).load();
    shared(sleeping).store(1);
    if (!ready() && !closed.load()) futex_wait(signal, seen);
    shared(sleeping).store(0);
  }
}

void ControlRing::put(std::span<const std::byte> bytes) {
  const size_t at = written_ % capacity_;
  const size_t first = std::min(bytes.size(), capacity_ - at);
  std::memcpy(data_ + at, bytes.data(), first);
  std::memcpy(data_, bytes.data() + first, bytes.size() - first);
  written_ += bytes.size();
}

ControlRing::Result ControlRing::write(std::span<const std::byte> frame, const std::atomic<bool>& closed) {
  if (frame.size() > UINT32_MAX) return Result::broken;
  std::lock_guard lock(write_mutex_);
  if (closed.load()) return Result::closed;
  const uint32_t length = static_cast<uint32_t>(frame.size());
  std::byte prefix[sizeof length];
  std::memcpy(prefix, &length, sizeof length);
  const Clock::time_point spin_until = Clock::now() + 200us;
  for (std::span<const std::byte> part : {std::span<const std::byte>(prefix), frame}) {
    while (!part.empty()) {
      const size_t space = room();
      if (space == SIZE_MAX) return Result::broken;
      if (space == 0) {
        publish_written();  // the consumer takes what is there, making room
        const Result waited = wait([this] { return room() != 0; }, header_.room_signal, header_.producer_sleeping,
                                   spin_until, closed);
        if (waited != Result::done) return waited;
        continue;
      }
      const size_t piece = std::min(space, part.size());
      put(part.first(piece));
      part = part.subspan(piece);
    }
  }
  publish_written();
  return Result::done;
}

ControlRing::Result ControlRing::take(std::byte* into, size_t size, Clock::time_point spin_until,
                                      const std::atomic<bool>& closed) {
  while (size > 0) {
    const size_t available = readable();
    if (available == SIZE_MAX) return Result::broken;
    if (available == 0) {
      if (const Result waited = wait_for_data(spin_until, closed); waited != Result::done) return waited;
      continue;
    }
    const size_t piece = std::min(available, size);
    copy_out(into, 0, piece);
    read_ += piece;
    publish_read();
    into += piece;
    size -= piece;
  }
  return Result::done;
}

ControlRing::Result ControlRing::read(protocol::Bytes& frame, uint64_t max_frame, std::chrono::microseconds spin,
                                      const std::atomic<bool>& closed) {
  const Clock::time_point spin_until = Clock::now() + spin;
  uint32_t length = 0;
  std::byte prefix[sizeof length];
  if (const Result result = take(prefix, sizeof prefix, spin_until, closed); result != Result::done) return result;
  std::memcpy(&length, prefix, sizeof length);
  if (length > max_frame) return Result::broken;
  // Grown as the bytes come, so a length the data never follows costs no memory.
  frame.clear();
  while (frame.size() < length) {
    const size_t filled = frame.size();
    frame.resize(filled + std::min<size_t>(length - filled, capacity_));
    if (const Result result = take(frame.data() + filled, frame.size() - filled, Clock::now() + spin, closed);
        result != Result::done)
      return result;
  }
  return Result::done;
}

// Without the consumers' lock another consumer may take bytes meanwhile, so an impossible count
// seen here only means "look": read() or peek() tells under the lock whether it is.
ControlRing::Result ControlRing::wait_readable(std::chrono::microseconds spin, const std::atomic<bool>& closed) {
  return wait_for_data(Clock::now() + spin, closed);
}

ControlRing::Result ControlRing::wait_for_data(Clock::time_point spin_until, const std::atomic<bool>& closed) {
  return wait([this] { return readable() != 0; }, header_.data_signal, header_.consumer_sleeping, spin_until, closed,
              &expecting_);
}

void ControlRing::copy_out(std::byte* into, uint64_t at, size_t size) const {
  if (size == 0) return;  // `into` may be an empty frame's null data()
  const size_t start = (read_ + at) % capacity_;
  const size_t first = std::min(size, capacity_ - start);
  std::memcpy(into, data_ + start, first);
  std::memcpy(into + first, data_, size - first);
}

ControlRing::Peeked ControlRing::peek(protocol::Bytes& frame, uint64_t max_frame) const {
  const size_t available = readable();
  if (available == SIZE_MAX) return Peeked::broken;
  uint32_t length = 0;
  if (available < sizeof length) return Peeked::incomplete;
  copy_out(reinterpret_cast<std::byte*>(&length), 0, sizeof length);
  if (length > max_frame) return Peeked::broken;
  if (available - sizeof length < length) return Peeked::incomplete;
  frame.resize(length);
  copy_out(frame.data(), sizeof length, length);
  return Peeked::frame;
}

void ControlRing::skip(size_t size) {
  read_.fetch_add(sizeof(uint32_t) + size, std::memory_order_release);
  publish_read();
}

void ControlRing::wake() {
  for (uint32_t* signal : {&header_.data_signal, &header_.room_signal}) {
    shared(*signal).fetch_add(1);
    futex_wake(*signal);
  }
}

// --- ControlChannel ----------------------------------------------------------------

namespace {

constexpr size_t smallest_capacity = 4096;
constexpr size_t largest_capacity = 64u << 20;

size_t segment_bytes(size_t capacity) { return 2 * (ControlRing::header_bytes + capacity); }

}  // namespace

ControlChannel::ControlChannel(std::unique_ptr<SharedSegment> segment, size_t capacity, Side side)
    : segment_(std::move(segment)) {
  std::byte* to_proxy = segment_->data();
  std::byte* to_client = to_proxy + ControlRing::header_bytes + capacity;
  outgoing_ = std::make_unique<ControlRing>(side == Side::client ? to_proxy : to_client, capacity);
  incoming_ = std::make_unique<ControlRing>(side == Side::client ? to_client : to_proxy, capacity);
}

size_t ControlChannel::capacity_of(uint64_t size) {
  if (size % 2 != 0 || size / 2 < ControlRing::header_bytes) return 0;
  const uint64_t capacity = size / 2 - ControlRing::header_bytes;
  return capacity >= smallest_capacity && capacity <= largest_capacity ? capacity : 0;
}

std::unique_ptr<ControlChannel> ControlChannel::create(size_t capacity) {
  capacity = std::clamp(capacity, smallest_capacity, largest_capacity);
  auto segment = SharedSegment::create(segment_bytes(capacity), memfd_name);  // a new memfd reads as zeros
  if (!segment) return nullptr;
  return std::unique_ptr<ControlChannel>(new ControlChannel(std::move(segment), capacity, Side::client));
}

std::unique_ptr<ControlChannel> ControlChannel::attach(pid_t owner, int fd, uint64_t inode, uint64_t size) {
  const size_t capacity = capacity_of(size);
  if (capacity == 0) return nullptr;
  auto segment = SharedSegment::attach(owner, fd, inode, size);
  if (!segment) return nullptr;
  return std::unique_ptr<ControlChannel>(new ControlChannel(std::move(segment), capacity, Side::proxy));
}

ControlChannel::~ControlChannel() {
  stop();
  if (reader_.joinable()) reader_.detach();  // destroyed by its own reader: it touches nothing more
}

void ControlChannel::listen(OnFrame on_frame, std::function<void()> on_broken, uint64_t max_frame,
                            std::chrono::microseconds spin, std::function<bool()> expecting,
                            std::function<bool()> takers) {
  std::lock_guard lock(reader_mutex_);
  incoming_->poll_while(std::move(expecting));
  on_frame_ = std::move(on_frame);
  max_frame_ = max_frame;
  reader_ = std::thread([this, on_broken = std::move(on_broken), spin, takers = std::move(takers)] {
    reader_id_ = std::this_thread::get_id();
    read_loop(on_broken, spin, takers);
  });
}

void ControlChannel::read_loop(const std::function<void()>& on_broken, std::chrono::microseconds spin,
                               const std::function<bool()>& takers) {
  protocol::Bytes frame;
  while (true) {
    const uint64_t taken = incoming_->taken();  // before the wait: a frame taken meanwhile is seen below
    ControlRing::Result result = incoming_->wait_readable(spin, closed_);
    if (result == ControlRing::Result::done && takers && takers())
      poll_for([&] { return !takers() || incoming_->taken() != taken || closed_.load(); }, taker_grace);
    std::unique_lock lock(consumer_mutex_);
    if (incoming_->taken() != taken) continue;  // a taker took the frame: look again
    if (result == ControlRing::Result::done) result = incoming_->read(frame, max_frame_, spin, closed_);
    if (result == ControlRing::Result::done) {
      on_frame_(std::move(frame));
      frame = {};
      continue;
    }
    // Closed before the lock goes: past a frame found too long, a taker would read its bytes as frames.
    const bool broke_it = result == ControlRing::Result::broken && !closed_.exchange(true);
    lock.unlock();  // on_broken may stop this channel's listeners, whose stop() takes it
    if (broke_it) on_broken();
    return;
  }
}

bool ControlChannel::try_take() {
  std::unique_lock lock(consumer_mutex_, std::try_to_lock);
  protocol::Bytes frame;
  if (!lock.owns_lock() || closed_.load(std::memory_order_acquire) ||
      incoming_->peek(frame, max_frame_) != ControlRing::Peeked::frame)
    return false;
  incoming_->skip(frame.size());
  on_frame_(std::move(frame));
  return true;
}

bool ControlChannel::send(std::span<const std::byte> frame) {
  const ControlRing::Result result = outgoing_->write(frame, closed_);
  if (result == ControlRing::Result::broken) close();
  return result == ControlRing::Result::done;
}

void ControlChannel::close() {
  closed_.store(true);
  outgoing_->wake();
  incoming_->wake();
}

void ControlChannel::stop() {
  close();
  if (reader_id_.load() == std::this_thread::get_id()) return;
  std::lock_guard lock(reader_mutex_);
  if (reader_.joinable()) reader_.join();
  std::lock_guard taker(consumer_mutex_);  // a frame a taker is handing on is handed on now
}

}  // namespace hivecl::transport
