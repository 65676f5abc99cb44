#include "icd/api.hpp"

namespace hivecl::icd {

void remote_info(Connection* connection, protocol::InfoFamily family, protocol::ObjectId object, cl_uint param,
                 InfoReply& reply, protocol::ObjectId device, cl_uint arg_index) {
  const auto answer = connection->call<protocol::GetInfo>(
      {.family = family, .object = object, .device = device, .arg_index = arg_index, .param = param});
  reply.bytes(answer.value.data(), answer.value.size());
}

}  // namespace hivecl::icd
