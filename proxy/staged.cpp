// Transfers through the staging ring, piece by piece (staged.hpp).
#include "proxy/staged.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include "log.hpp"
#include "proxy/data_path.hpp"
#include "proxy/staging.hpp"

namespace hivecl::proxy {

BoxPiece box_piece(const Extent& region, size_t element, uint64_t offset, size_t most) {
  const uint64_t row = uint64_t{region[0]} * element;
  const uint64_t slice = row * region[1];
  const size_t z = offset / slice;
  const size_t y = (offset % slice) / row;
  const size_t x = (offset % row) / element;
  if (x == 0 && y == 0 && slice <= most) {
    const size_t slices = std::min<uint64_t>(most / slice, region[2] - z);
    return {{0, 0, z}, {region[0], region[1], slices}, offset, slices * slice};
  }
  if (x == 0 && row <= most) {
    const size_t rows = std::min<uint64_t>(most / row, region[1] - y);
    return {{0, y, z}, {region[0], rows, 1}, offset, rows * row};
  }
  const size_t elements = std::min<uint64_t>(std::max<size_t>(most / element, 1), region[0] - x);
  return {{x, y, z}, {elements, 1, 1}, offset, elements * element};
}

namespace {

// The event of a command made of several piece commands: a marker after all of them
// (the only one when there is one). Consumes the piece events.
cl_event command_event(cl_command_queue queue, std::vector<cl_event>& pieces) {
  if (pieces.size() == 1) return pieces.front();
  cl_event event = nullptr;
  const cl_int status =
      clEnqueueMarkerWithWaitList(queue, static_cast<cl_uint>(pieces.size()), pieces.data(), &event);
  for (cl_event piece : pieces) clReleaseEvent(piece);
  check(status);
  return event;
}

// One piece of a write on its way into a staging slot.
struct Arriving {
  BoxPiece piece;
  StagingRing::Slot slot;
  std::shared_ptr<transport::Completion> arrived;
};

class WritePipeline {
 public:
  WritePipeline(Call& call, const Enqueue& enqueue, const StagedTransfer& transfer)
      : call_(call), enqueue_(enqueue), transfer_(transfer), ring_(staging_of(call.session, enqueue.queue)),
        path_(call.session.data_path()) {}

  cl_event run() {
    const bool ahead = path_.kind() == transport::DataPath::mpi;
    const ClientSide& client = transfer_.client;
    const uint64_t total = transfer_.bytes();
    uint64_t next = 0;
    while (next < total || !arriving_.empty()) {
      StagingRing::Slot slot{};
      const bool room = arriving_.empty() ? (slot = ring_.acquire(StagingRing::Filler::host), true)
                                         : ahead && ring_.try_acquire(StagingRing::Filler::host, slot);
      if (next < total && room) {
        const BoxPiece piece = box_piece(transfer_.region, client.element, next, ring_.slot_bytes());
        arriving_.push_back({piece, slot,
                             client.pitched()
                                 ? path_.fetch_rows(client.rows_of(piece), slot.data)
                                 : path_.fetch(call_.sequence, client.address, next, slot.data, piece.bytes)});
        next += piece.bytes;
        continue;
      }
      if (room) ring_.release(slot);
      if (!take_arrived()) next = total;  // the client is gone: nothing more will come
    }
    call_.bulk_consumed = true;
    if (failure_ != CL_SUCCESS) {
      for (cl_event piece : pieces_) clReleaseEvent(piece);
      throw ClError{failure_};
    }
    return command_event(enqueue_.queue, pieces_);
  }

 private:
  // Sends the oldest arriving piece to the device; false if it never came.
  bool take_arrived() {
    const Arriving arriving = arriving_.front();
    arriving_.pop_front();
    if (arriving.arrived->wait() != transport::OpStatus::done) {
      ring_.release(arriving.slot);
      failure_ = peer_lost_status;
      return false;
    }
    if (failure_ == CL_SUCCESS) failure_ = enqueue_piece(arriving);
    if (failure_ != CL_SUCCESS) ring_.release(arriving.slot);
    return true;
  }

  cl_int enqueue_piece(const Arriving& arriving) {
    cl_event event = nullptr;
    const cl_int status = transfer_.enqueue(enqueue_, arriving.piece, arriving.slot.data, &event);
    if (status != CL_SUCCESS) return status;
    clFlush(enqueue_.queue);
    when_complete(event, [&ring = ring_, slot = arriving.slot](cl_int) { ring.release(slot); });
    pieces_.push_back(event);
    return CL_SUCCESS;
  }

  Call& call_;
  const Enqueue& enqueue_;
  const StagedTransfer& transfer_;
  StagingRing& ring_;
  DataPath& path_;
  std::deque<Arriving> arriving_;
  std::vector<cl_event> pieces_;
  cl_int failure_ = CL_SUCCESS;
};

// A read's pieces as the device fills their slots: handed to the client in order, then the
// read's status.
class ReadDelivery {
 public:
  ReadDelivery(Session& session, const ClientSide& client, StagingRing& ring, size_t pieces, const Replier& replier)
      : replier_(replier), path_(session.data_path()), ring_(ring), sequence_(replier.sequence()), client_(client),
        pieces_(pieces) {}
  // A piece's slot was filled (or failed with `status`) by the device.
  void filled(size_t index, const BoxPiece& piece, StagingRing::Slot slot, cl_int status) {
    std::lock_guard lock(mutex_);
    if (status < 0 && status_ == CL_SUCCESS) status_ = status;
    ready_.emplace(index, Ready{piece, slot});
    for (auto it = ready_.find(next_); it != ready_.end(); it = ready_.find(next_)) {
      const Ready ready = it->second;
      ready_.erase(it);
      ++next_;
      auto sent = [&ring = ring_, slot = ready.slot] { ring.release(slot); };
      if (client_.pitched()) {
        path_.deliver_rows(client_.rows_of(ready.piece), ready.slot.data, std::move(sent));
      } else {
        path_.deliver(sequence_, client_.address, ready.piece.offset, ready.slot.data, ready.piece.bytes,
                      std::move(sent));
      }
    }
    if (next_ == pieces_) replier_.send_status(status_);
  }
  // The pieces after `count` were never enqueued: the read ends with `status`.
  void truncate(size_t count, cl_int status) {
    std::lock_guard lock(mutex_);
    pieces_ = count;
    if (status_ == CL_SUCCESS) status_ = status;
    if (next_ == pieces_) replier_.send_status(status_);
  }

 private:
  struct Ready {
    BoxPiece piece;
    StagingRing::Slot slot;
  };
  std::mutex mutex_;
  const Replier replier_;
  DataPath& path_;
  StagingRing& ring_;
  const uint64_t sequence_;
  const ClientSide client_;
  size_t pieces_;
  size_t next_ = 0;
  std::map<size_t, Ready> ready_;
  cl_int status_ = CL_SUCCESS;
};

std::vector<BoxPiece> pieces_of(const StagedTransfer& transfer, size_t most) {
  std::vector<BoxPiece> pieces;
  for (uint64_t offset = 0; offset < transfer.bytes(); offset += pieces.back().bytes)
    pieces.push_back(box_piece(transfer.region, transfer.client.element, offset, most));
  return pieces;
}

}  // namespace

cl_event write_staged(Call& call, const Enqueue& enqueue, const StagedTransfer& transfer) {
  if (transfer.bytes() == 0) throw ClError{CL_INVALID_VALUE};
  return WritePipeline(call, enqueue, transfer).run();
}

void fill_staged(Call& call, cl_context context, cl_device_id device, cl_mem mem, const StagedTransfer& transfer) {
  cl_int status = CL_SUCCESS;
  const cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  cl_event written = nullptr;
  try {
    check(status);
    written = write_staged(call, {.queue = queue}, transfer);
    status = clWaitForEvents(1, &written);
  } catch (const ClError& error) {
    status = error.code;
  }
  if (written) clReleaseEvent(written);
  if (queue) clReleaseCommandQueue(queue);
  if (status == CL_SUCCESS) return;
  clReleaseMemObject(mem);
  throw ClError{status == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST ? CL_OUT_OF_RESOURCES : status};
}

void read_staged(Call& call, const Enqueue& enqueue, const StagedTransfer& transfer, const Replier& later,
                 const std::function<void()>& confirm, protocol::ObjectId event_id) {
  if (transfer.bytes() == 0) throw ClError{CL_INVALID_VALUE};
  Session& session = call.session;
  StagingRing& ring = staging_of(session, enqueue.queue);
  const std::vector<BoxPiece> pieces = pieces_of(transfer, ring.slot_bytes());
  auto delivery = std::make_shared<ReadDelivery>(session, transfer.client, ring, pieces.size(), later);
  std::vector<cl_event> events;
  for (size_t index = 0; index < pieces.size(); ++index) {
    const BoxPiece& piece = pieces[index];
    const StagingRing::Slot slot = ring.acquire(StagingRing::Filler::device);
    cl_event event = nullptr;
    const cl_int status = transfer.enqueue(enqueue, piece, slot.data, &event);
    if (status != CL_SUCCESS) {
      ring.release(slot);
      if (index == 0) throw ClError{status};  // nothing started: the reply (and status) says it
      delivery->truncate(index, status);
      break;
    }
    clFlush(enqueue.queue);
    when_complete(event, [delivery, index, piece, slot](cl_int done) { delivery->filled(index, piece, slot, done); });
    events.push_back(event);
    if (index == 0) confirm();
  }
  try {
    keep_event(call, event_id, command_event(enqueue.queue, events));
  } catch (const ClError& error) {
    log::warn("session ", session.number(), ": read event lost (", error.code, ")");
  }
}

}  // namespace hivecl::proxy
