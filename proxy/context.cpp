// Context family on the proxy side.
#include <CL/cl.h>

#include <cstdint>
#include <vector>

#include "proxy/executors.hpp"
#include "proxy/vendors.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

// What a client may forward (libhivecl refuses the rest itself): CL_CONTEXT_INTEROP_USER_SYNC,
// once, true or false. Checked here too: NVIDIA crashes natively in CTS test_api
// negative_create_context, which gives it invalid properties among other bad input (which one
// crashes it was not isolated), and a crash of the proxy ends every client's session.
void check_forwarded_properties(const std::vector<int64_t>& properties) {
  if (properties.size() % 2 != 0) throw ClError{CL_INVALID_VALUE};
  if (properties.size() > 2 || (!properties.empty() && (properties[0] != CL_CONTEXT_INTEROP_USER_SYNC ||
                                                        (properties[1] != CL_TRUE && properties[1] != CL_FALSE))))
    throw ClError{CL_INVALID_PROPERTY};
}

}  // namespace

CreateContext::Reply execute(Call& call, const CreateContext::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const auto devices = session.devices(request.devices);
  if (devices.empty()) throw ClError{CL_INVALID_VALUE};
  check_forwarded_properties(request.properties);
  const cl_platform_id platform = session.platform_of(request.devices.front());
  for (ObjectId device : request.devices)
    if (session.platform_of(device) != platform) throw ClError{CL_INVALID_DEVICE};
  // The client never sends a platform: the native one of the devices takes its place.
  std::vector<cl_context_properties> properties{CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform)};
  for (int64_t value : request.properties) properties.push_back(static_cast<cl_context_properties>(value));
  properties.push_back(0);
  cl_int status = CL_SUCCESS;
  cl_context context = create_native_context(platform, properties.data(), static_cast<cl_uint>(devices.size()),
                                             devices.data(), &status);
  check(status);
  session.add(request.id, ObjectKind::context, context);
  return {};
}

}  // namespace hivecl::proxy
