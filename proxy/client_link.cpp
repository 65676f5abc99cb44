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

void MpiClientLink::send_bulk(uint64_t sequence, std::shared_ptr<HostBuffer> data, size_t chunk, cl_int status) {
  const int tag = transport::data_tag(sequence);
  const size_t size = data->size;
  for (size_t offset = 0; offset < size; offset += chunk)
    engine_.send(link_, tag, data->data.get() + offset, std::min(chunk, size - offset),
                 [data](OpStatus, Bytes&&) {});  // the lambda keeps the data alive until sent
  Bytes end;
  end.reserve(sizeof status);  // GCC 12 warns (stringop-overflow) when the vector grows from empty here
  protocol::Writer writer(end);
  protocol::encode(writer, static_cast<int32_t>(status));
  engine_.send(link_, tag, std::move(end));
}

bool MpiClientLink::receive_bulk(uint64_t sequence, std::byte* data, size_t size, size_t chunk) {
  auto transfer = transport::Transfer::receive(engine_, link_, transport::data_tag(sequence), data, size, chunk);
  return transfer->wait() == OpStatus::done;
}

void MpiClientLink::forget() { engine_.forget(link_); }

}  // namespace hivecl::proxy
