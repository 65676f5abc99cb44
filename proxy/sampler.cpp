// Samplers on the proxy side.
#include <CL/cl.h>

#include "image_format.hpp"
#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

CreateSampler::Reply execute(Call& call, const CreateSampler::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  if (!sampler_modes_valid(request.normalized_coords, request.addressing_mode, request.filter_mode))
    throw ClError{CL_INVALID_VALUE};
  cl_int status = CL_SUCCESS;
  const cl_sampler sampler = clCreateSampler(context, request.normalized_coords ? CL_TRUE : CL_FALSE,
                                             request.addressing_mode, request.filter_mode, &status);
  check(status);
  session.add(request.id, ObjectKind::sampler, sampler);
  return {};
}

cl_int set_sampler_arg(Session& session, cl_kernel kernel, const KernelArg& arg) {
  if (arg.size != sizeof(cl_sampler)) return CL_INVALID_ARG_SIZE;
  try {
    const cl_sampler sampler = session.get<cl_sampler>(arg.object);
    return clSetKernelArg(kernel, arg.index, sizeof sampler, &sampler);
  } catch (const ClError& error) {
    return error.code;  // released since it was set
  }
}

}  // namespace hivecl::proxy
