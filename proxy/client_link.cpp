#include "proxy/client_link.hpp"

#include <algorithm>

#include "transport/tags.hpp"

namespace hivecl::proxy {

using protocol::Bytes;
using transport::OpStatus;

void MpiClientLink::listen(std::function<void(Bytes&&)> on_frame) {
  engine_.listen(link_, transport::control_tag, true, std::move(on_frame));
}

void MpiClientLink::send_frame(Bytes&& frame) { engine_.send(link_, transport::control_tag, std::move(frame)); }

void MpiClientLink::send_chunk(uint64_t sequence, const std::byte* data, size_t size, std::function<void()> sent) {
  engine_.send(link_, transport::data_tag(sequence), data, size,
               [sent = std::move(sent)](OpStatus, Bytes&&) { sent(); });
}

std::shared_ptr<transport::Completion> MpiClientLink::receive_chunk(uint64_t sequence, std::byte* data, size_t size) {
  auto completion = std::make_shared<transport::Completion>();
  engine_.receive(link_, transport::data_tag(sequence), data, size,
                  [completion](OpStatus status, Bytes&&) { completion->complete(status); });
  return completion;
}

void MpiClientLink::send_status(uint64_t sequence, cl_int status) {
  Bytes end;
  end.reserve(sizeof status);  // GCC 12 warns (stringop-overflow) when the vector grows from empty here
  protocol::Writer writer(end);
  protocol::encode(writer, static_cast<int32_t>(status));
  engine_.send(link_, transport::data_tag(sequence), std::move(end));
}

bool MpiClientLink::receive_bulk(uint64_t sequence, std::byte* data, size_t size, size_t chunk) {
  auto transfer = transport::Transfer::receive(engine_, link_, transport::data_tag(sequence), data, size, chunk);
  return transfer->wait() == OpStatus::done;
}

void MpiClientLink::forget() { engine_.forget(link_); }

}  // namespace hivecl::proxy
