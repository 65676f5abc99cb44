// Transfers through the staging ring (staging.hpp), piece by piece: a write's pieces arrive in
// slots while earlier ones go to the device, a read's go to the client as the device fills
// them. The data is seen as a packed box (elements, rows, slices), so that buffers, rectangles
// and images share one pipeline: each piece is a box of its own that fits a slot.
#pragma once

#include <CL/cl.h>

#include <array>
#include <functional>

#include "proxy/executors.hpp"
#include "transport/peer_memory.hpp"

namespace hivecl::proxy {

using Extent = std::array<size_t, 3>;

// A piece of a packed box: where it starts in the box (element, row, slice) and in the
// packed data, its extent, and its bytes.
struct BoxPiece {
  Extent origin;
  Extent region;
  uint64_t offset;
  size_t bytes;
};

// The piece of a packed box of `region` (elements of `element` bytes) that starts at `offset`
// of its data (an element's first byte), of at most `most` bytes: whole slices where `offset`
// starts one and one fits, else whole rows of one slice where it starts a row and one fits,
// else elements of one row. Pieces so cut follow one another in the packed data; cut from any
// element up to an element's end with `most` the bytes left, they cover that run exactly.
BoxPiece box_piece(const Extent& region, size_t element, uint64_t offset, size_t most);

// The client's side of a staged transfer: where its data lies on the memory data path, and, when
// it is not packed there, the pitches of its rows, which the proxy then gathers or scatters
// itself piece by piece (protocol::InPlace).
struct ClientSide {
  uint64_t address = 0;
  size_t element = 1;
  uint64_t row_pitch = 0;  // 0: packed
  uint64_t slice_pitch = 0;
  bool pitched() const { return row_pitch != 0; }
  // The client's rows of `piece` when pitched.
  transport::PeerRows rows_of(const BoxPiece& piece) const {
    return {.address = address + piece.origin[2] * slice_pitch + piece.origin[1] * row_pitch + piece.origin[0] * element,
            .row_bytes = piece.region[0] * element, .rows = piece.region[1], .slices = piece.region[2],
            .row_pitch = row_pitch, .slice_pitch = slice_pitch};
  }
};

// A transfer seen as a packed box (elements of client.element bytes), and the native command that
// moves one of its pieces between the device and host memory `data` (the piece, packed).
struct StagedTransfer {
  Extent region;
  ClientSide client;
  std::function<cl_int(const Enqueue&, const BoxPiece&, std::byte* data, cl_event* event)> enqueue;
  uint64_t bytes() const { return uint64_t{region[0]} * client.element * region[1] * region[2]; }
};

// A box of nothing is CL_INVALID_VALUE (a transfer of nothing is its caller's).
// A write's data through the ring: while piece i goes to the device, piece i+1 arrives (on the
// MPI path every free slot has a piece on its way). Every piece is taken even after a failure,
// so that the data stream stays in step. Returns the command's event; ClError when a piece
// could not be enqueued or did not arrive.
cl_event write_staged(Call& call, const Enqueue& enqueue, const StagedTransfer& transfer);

// A new memory object's initial contents written through the ring from the client's memory on a
// queue of its own on `device` of its context, waited for (the call that makes the object
// returns once it holds them). On failure `mem` is released and ClError thrown.
void fill_staged(Call& call, cl_context context, cl_device_id device, cl_mem mem, const StagedTransfer& transfer);

// A read's pieces as the device fills their slots, handed to the client in order (the MPI path
// needs it), then the read's status on the request's data tag. `confirm` answers the request
// once the first piece is enqueued: the client then expects the data, and on the MPI path a read
// larger than the ring waits for the client to take pieces. ClError if not even the first piece
// could be enqueued. The command's event is kept under `event_id`.
void read_staged(Call& call, const Enqueue& enqueue, const StagedTransfer& transfer, const Replier& later,
                 const std::function<void()>& confirm, protocol::ObjectId event_id);

}  // namespace hivecl::proxy
