// Samplers on the client side: created on the proxy, described from what the client keeps.
#include <CL/cl.h>

#include "icd/api.hpp"
#include "icd/spanning.hpp"
#include "image_format.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

cl_sampler create_sampler(cl_context context, cl_bool normalized_coords, cl_addressing_mode addressing_mode,
                          cl_filter_mode filter_mode, std::vector<cl_sampler_properties> properties) {
  checked(context);
  if (!sampler_modes_valid(normalized_coords, addressing_mode, filter_mode)) throw ClError{CL_INVALID_VALUE};
  if (!supports_images(context)) throw ClError{CL_INVALID_OPERATION};
  auto sampler = std::make_unique<_cl_sampler>();
  sampler->connection = context->connection;
  sampler->id = context->connection->new_id();
  sampler->context = Ref<_cl_context>(context);
  sampler->normalized_coords = normalized_coords;
  sampler->addressing_mode = addressing_mode;
  sampler->filter_mode = filter_mode;
  sampler->properties = std::move(properties);
  const auto create = [&](Connection* connection, ObjectId id, ObjectId context_there) {
    connection->call<CreateSampler>({.id = id, .context = context_there,
                                     .normalized_coords = normalized_coords == CL_TRUE,
                                     .addressing_mode = addressing_mode, .filter_mode = filter_mode});
  };
  create(context->connection, sampler->id, context->id);
  // Spanning contexts: one on every part, for the kernels launched there (translate_args).
  try {
    replicate(sampler.get(), context, create);
  } catch (...) {
    release_remote(context->connection, ObjectKind::sampler, sampler->id);
    throw;
  }
  return publish(sampler.release());
}

// A property list read into its three settings (the specification's defaults for those not
// named); CL_INVALID_VALUE for an unknown or repeated property.
cl_sampler create_sampler_with_properties(cl_context context, const cl_sampler_properties* properties) {
  checked(context);
  cl_bool normalized_coords = CL_TRUE;
  cl_addressing_mode addressing_mode = CL_ADDRESS_CLAMP;
  cl_filter_mode filter_mode = CL_FILTER_NEAREST;
  std::vector<cl_sampler_properties> list;
  cl_bitfield seen = 0;
  for (const cl_sampler_properties* at = properties; at && *at; at += 2) {
    const auto value = at[1];
    switch (at[0]) {
      case CL_SAMPLER_NORMALIZED_COORDS: normalized_coords = static_cast<cl_bool>(value); break;
      case CL_SAMPLER_ADDRESSING_MODE: addressing_mode = static_cast<cl_addressing_mode>(value); break;
      case CL_SAMPLER_FILTER_MODE: filter_mode = static_cast<cl_filter_mode>(value); break;
      default: throw ClError{CL_INVALID_VALUE};
    }
    const cl_bitfield bit = cl_bitfield{1} << (at[0] - CL_SAMPLER_NORMALIZED_COORDS);
    if (seen & bit) throw ClError{CL_INVALID_VALUE};
    seen |= bit;
    list.insert(list.end(), at, at + 2);
  }
  if (properties) list.push_back(0);
  return create_sampler(context, normalized_coords, addressing_mode, filter_mode, std::move(list));
}

}  // namespace

namespace hivecl::icd {

KernelArg sampler_arg(const _cl_kernel* kernel, const KernelArg& base, const void* value) {
  const cl_sampler sampler = arg_handle<cl_sampler>(base, value);
  if (!sampler || !is_live(sampler, HandleKind::sampler) ||
      (sampler->connection != kernel->connection && sampler->context.get() != kernel->program->context.get()))
    throw ClError{CL_INVALID_SAMPLER};
  KernelArg arg = base;
  arg.kind = ArgKind::sampler;
  arg.object = sampler->id;
  return arg;
}

}  // namespace hivecl::icd

CL_API_ENTRY cl_sampler CL_API_CALL clCreateSampler(cl_context context, cl_bool normalized_coords,
                                                    cl_addressing_mode addressing_mode, cl_filter_mode filter_mode,
                                                    cl_int* errcode_ret) {
  return guarded_create(errcode_ret,
                        [&] { return create_sampler(context, normalized_coords, addressing_mode, filter_mode, {}); });
}

CL_API_ENTRY cl_sampler CL_API_CALL clCreateSamplerWithProperties(cl_context context,
                                                                  const cl_sampler_properties* sampler_properties,
                                                                  cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] { return create_sampler_with_properties(context, sampler_properties); });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainSampler(cl_sampler sampler) {
  return guarded([&] { retain(sampler); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseSampler(cl_sampler sampler) {
  return guarded([&] { release(sampler); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetSamplerInfo(cl_sampler sampler, cl_sampler_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return guarded([&] {
    checked(sampler);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_SAMPLER_REFERENCE_COUNT: return reply.scalar(sampler->refs.load());
      case CL_SAMPLER_CONTEXT: return reply.scalar(static_cast<cl_context>(sampler->context.get()));
      case CL_SAMPLER_NORMALIZED_COORDS: return reply.scalar(sampler->normalized_coords);
      case CL_SAMPLER_ADDRESSING_MODE: return reply.scalar(sampler->addressing_mode);
      case CL_SAMPLER_FILTER_MODE: return reply.scalar(sampler->filter_mode);
      case CL_SAMPLER_PROPERTIES: return reply.list(sampler->properties);
      default: throw ClError{CL_INVALID_VALUE};
    }
  });
}
