// How the bulk data of one session moves between the client's memory and the proxy's
// staging slots: over MPI (any node; chunks on the request's data tag) or, with the
// client on this node, by the proxy copying the client's memory itself
// (transport/peer_memory.hpp), MPI then carrying only control frames. Chosen at Hello.
#pragma once

#include <memory>

#include "protocol/messages.hpp"
#include "proxy/client_link.hpp"
#include "transport/engine.hpp"
#include "transport/peer_memory.hpp"

namespace hivecl::proxy {

class DataPath {
 public:
  virtual ~DataPath() = default;
  virtual transport::DataPath kind() const = 0;
  // Writes: brings `size` bytes at `offset` of request `sequence`'s data into `slot`.
  // Chunks of one request are fetched in order of offset. The completion says whether it came.
  virtual std::shared_ptr<transport::Completion> fetch(uint64_t sequence, uint64_t host_address, uint64_t offset,
                                                       std::byte* slot, size_t size) = 0;
  // Reads: hands `size` bytes at `offset` of the request's data to the client, in order of
  // offset; `sent` runs when `slot` may be reused.
  virtual void deliver(uint64_t sequence, uint64_t host_address, uint64_t offset, const std::byte* slot, size_t size,
                       std::function<void()> sent) = 0;
  // The memory path only (protocol::InPlace): rows of the client's memory laid out with its own
  // pitches, gathered into a slot (packed) or scattered from one. Elsewhere they fail.
  virtual std::shared_ptr<transport::Completion> fetch_rows(const transport::PeerRows& rows, std::byte* slot);
  virtual void deliver_rows(const transport::PeerRows& rows, const std::byte* slot, std::function<void()> sent);
};

// Through the session's link to its client (MPI in hivecl-proxy).
class MpiDataPath final : public DataPath {
 public:
  explicit MpiDataPath(ClientLinkPtr link) : link_(std::move(link)) {}
  transport::DataPath kind() const override { return transport::DataPath::mpi; }
  std::shared_ptr<transport::Completion> fetch(uint64_t sequence, uint64_t host_address, uint64_t offset,
                                               std::byte* slot, size_t size) override;
  void deliver(uint64_t sequence, uint64_t host_address, uint64_t offset, const std::byte* slot, size_t size,
               std::function<void()> sent) override;

 private:
  ClientLinkPtr link_;
};

class MemoryDataPath final : public DataPath {
 public:
  explicit MemoryDataPath(transport::PeerMemory client) : client_(client) {}
  transport::DataPath kind() const override { return transport::DataPath::memory; }
  std::shared_ptr<transport::Completion> fetch(uint64_t sequence, uint64_t host_address, uint64_t offset,
                                               std::byte* slot, size_t size) override;
  void deliver(uint64_t sequence, uint64_t host_address, uint64_t offset, const std::byte* slot, size_t size,
               std::function<void()> sent) override;
  std::shared_ptr<transport::Completion> fetch_rows(const transport::PeerRows& rows, std::byte* slot) override;
  void deliver_rows(const transport::PeerRows& rows, const std::byte* slot, std::function<void()> sent) override;

 private:
  transport::PeerMemory client_;
};

// The team of threads that copies same-node data (copy_threads; by default half
// the cores, at least 1, at most 8).
transport::CopyTeam& copy_team(size_t configured_threads);

// The path for a client that said `hello`: memory when it asks for it or leaves it to us, is
// on this boot of this machine, is not this process, and its probe is `proof` and reads back
// from its memory; MPI otherwise. Logs the choice. `proof` is what only the client's own
// watchdog connection gave it (its token, or the challenge's nonce for a session started
// without MPI): so a Hello naming another process, whose memory does not hold it, cannot make
// this proxy read or write that process's memory for the client.
std::unique_ptr<DataPath> choose_data_path(const protocol::Hello::Request& hello, const protocol::Bytes& proof,
                                           uint32_t session, const ClientLinkPtr& link, size_t copy_threads);

}  // namespace hivecl::proxy
