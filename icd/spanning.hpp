// Contexts whose devices belong to several connections (proxies, or a proxy and this process's
// in-process devices). Such a context has a remote context on each connection (its parts);
// programs, kernels, samplers and user events are made on every part, queues and their
// commands on their device's part. A buffer is made on the first part and on any other part
// where a command first uses it; libhivecl keeps, for every byte range of a buffer, which
// parts hold its latest data, and before a command on a part that reads a range held
// elsewhere it moves that range there. Between two proxies the data goes from one to the
// other (protocol/messages.hpp, "proxy to proxy"): the holder reads it once the commands of
// the queues that wrote it there have ended. To or from this process's in-process devices, and
// between two proxies of this node (local_proxy_moves), it goes through this process: once
// those commands have ended, HiveCL's move thread reads the range and writes it on the other
// part. Either way the enqueue does not wait, and every command on the part that uses the range
// while it may still be landing waits for it to have landed. Images follow the same rules as
// one range, the whole image (proxy to proxy its pixels packed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "icd/connection.hpp"
#include "icd/objects.hpp"

namespace hivecl::icd {

class EnqueuedCommand;
struct OwnEvent;

// How a command uses a buffer range.
enum class Access : uint8_t { reads = 1, writes = 2, reads_writes = 3 };

// Where a buffer's data is, for the root buffer or the image of a spanning context (sub-buffers
// share their parent's): ranges and the parts holding their latest data, and per part the
// queues that wrote there (whose commands a move from that part must wait for).
struct Spread {
  using PartMask = uint64_t;
  static constexpr size_t max_parts = 64;

  std::mutex mutex;
  size_t size = 0;
  std::map<size_t, PartMask> holders;  // range start → holders of [start, next start)
  std::vector<std::vector<Ref<_cl_command_queue>>> writers;
  // Data moved to a part: commands there that use an overlapping range wait for `landed`, until
  // a command writes over all of it.
  struct Landing {
    size_t begin = 0, end = 0;
    std::shared_ptr<OwnEvent> landed;
  };
  std::vector<std::vector<Landing>> landings;
};

// A ticket for buffer data or an event status sent from proxy to proxy: random, so that no
// other party can guess it.
protocol::Bytes new_peer_ticket();

// The state of a new root buffer of `context`, made on its first part: with initial data
// (copied from the application) only that part holds it; without, any part is as good.
std::shared_ptr<Spread> new_spread(const _cl_context* context, size_t size, bool with_data);

// The id of `mem` on the connection of `command`'s queue for the command, which uses
// [offset, offset + size) of it: in a spanning context, made there first if it is not yet, and
// a range it reads brought there from the part that holds it; the command waits for that, and
// for any earlier move still landing part of the range there. The application's own buffer id
// elsewhere.
protocol::ObjectId use_mem(const _cl_mem* mem, EnqueuedCommand& command, Access access, size_t offset, size_t size);
// The same for the whole of `mem`.
protocol::ObjectId use_mem(const _cl_mem* mem, EnqueuedCommand& command, Access access);

// Makes an object of a spanning context on each of its other parts: `create(connection, id,
// context_id_there)` sends the creation; the ids become `object`'s replicas. Should one fail,
// those made are released and the error is thrown.
template <class T, class Create>
void replicate(T* object, const _cl_context* context, Create create) {
  try {
    for (const Replica& part : context->replicas) {
      const Replica replica{part.connection, part.connection->new_id()};
      create(part.connection, replica.id, part.id);
      object->replicas.push_back(replica);
    }
  } catch (...) {
    release_replicas(object);
    throw;
  }
}

// Data moved through this process (HiveCL's move thread only), `count` pieces of at most
// `piece_bytes`: piece i is read into one of two buffers on HiveCL's read-ahead thread while this
// thread writes piece i - 1 from the other, so that the source's reads overlap the target's
// writes. `read(i, memory)` returns once piece i is in `memory`, `write(i, memory)` once the
// target holds it (the memory is then reused); a failure of either is thrown once no read is
// still running.
void relay_pieces(size_t count, size_t piece_bytes, const std::function<void(size_t, std::byte*)>& read,
                  const std::function<void(size_t, const std::byte*)>& write);

// Releases the context's queues of HiveCL's own (its destruction).
void release_service_queues(_cl_context* context);

}  // namespace hivecl::icd
