// clGet*Info for every object family on the proxy side (device information is published
// in the rendezvous record instead). Values that are handles never leave the proxy: the
// client answers them from its own objects.
#include <CL/cl.h>

#include <algorithm>
#include <array>

#include "proxy/build_warnings.hpp"
#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

constexpr std::array handle_params{
    std::pair{InfoFamily::context, cl_uint{CL_CONTEXT_DEVICES}},
    std::pair{InfoFamily::context, cl_uint{CL_CONTEXT_PROPERTIES}},
    std::pair{InfoFamily::command_queue, cl_uint{CL_QUEUE_CONTEXT}},
    std::pair{InfoFamily::command_queue, cl_uint{CL_QUEUE_DEVICE}},
    std::pair{InfoFamily::command_queue, cl_uint{CL_QUEUE_DEVICE_DEFAULT}},
    std::pair{InfoFamily::mem_object, cl_uint{CL_MEM_HOST_PTR}},
    std::pair{InfoFamily::mem_object, cl_uint{CL_MEM_CONTEXT}},
    std::pair{InfoFamily::mem_object, cl_uint{CL_MEM_ASSOCIATED_MEMOBJECT}},
    std::pair{InfoFamily::program, cl_uint{CL_PROGRAM_CONTEXT}},
    std::pair{InfoFamily::program, cl_uint{CL_PROGRAM_DEVICES}},
    std::pair{InfoFamily::program, cl_uint{CL_PROGRAM_BINARIES}},
    std::pair{InfoFamily::kernel, cl_uint{CL_KERNEL_CONTEXT}},
    std::pair{InfoFamily::kernel, cl_uint{CL_KERNEL_PROGRAM}},
    std::pair{InfoFamily::event, cl_uint{CL_EVENT_COMMAND_QUEUE}},
    std::pair{InfoFamily::event, cl_uint{CL_EVENT_CONTEXT}},
    std::pair{InfoFamily::image, cl_uint{CL_IMAGE_BUFFER}},
};

bool is_handle_param(InfoFamily family, uint32_t param) {
  return std::find(handle_params.begin(), handle_params.end(), std::pair{family, param}) != handle_params.end();
}

// Binds the object (and device/argument) of the request to a clGet*Info function.
template <class Function, class... Leading>
Bytes native_info(Function function, const GetInfo::Request& request, Leading... leading) {
  return query_info([&](size_t size, void* value, size_t* size_ret) {
    return function(leading..., request.param, size, value, size_ret);
  });
}

cl_device_id optional_device(Session& session, ObjectId id) { return id == no_object ? nullptr : session.device(id); }

// An ended command's four timestamps, QUEUED to END, which never change again (the client keeps
// them); before its end, or without profiling, the one timestamp asked for, as natively.
Bytes event_timestamps(cl_event event, const GetInfo::Request& request) {
  cl_int status = CL_QUEUED;
  std::array<cl_ulong, 4> times{};
  bool ended = clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) ==
                   CL_SUCCESS &&
               status == CL_COMPLETE;
  for (size_t i = 0; ended && i < times.size(); ++i)
    ended = clGetEventProfilingInfo(event, static_cast<cl_profiling_info>(CL_PROFILING_COMMAND_QUEUED + i),
                                    sizeof times[i], &times[i], nullptr) == CL_SUCCESS;
  if (!ended) return native_info(clGetEventProfilingInfo, request, event);
  const auto* bytes = reinterpret_cast<const std::byte*>(times.data());
  return Bytes(bytes, bytes + sizeof times);
}

// clGetKernelSubGroupInfo with the client's input value and value size (the native runtime
// checks them): one call, as the application made it. Asked for the size alone, the reply is
// that many bytes of zeros.
Bytes sub_group_info(cl_kernel kernel, cl_device_id device, const GetInfo::Request& request) {
  if (request.value_size > max_sub_group_query_bytes || request.input.size() > max_sub_group_query_bytes)
    throw ClError{CL_INVALID_VALUE};
  const void* input = request.input.empty() ? nullptr : request.input.data();
  Bytes value(request.value_size);
  size_t size = 0;
  check(clGetKernelSubGroupInfo(kernel, device, request.param, request.input.size(), input, value.size(),
                                value.empty() ? nullptr : value.data(), &size));
  value.resize(request.value_size ? std::min(size, value.size()) : size);
  return value;
}

// A build's log and options as the application's options make them, where the native runtime did
// not get its warning switches (build_warnings.hpp).
Bytes program_build_info(Session& session, const GetInfo::Request& request) {
  const cl_program program = session.get<cl_program>(request.object);
  Bytes value = native_info(clGetProgramBuildInfo, request, program, session.device(request.device));
  const Session::SwitchlessBuild* build = session.switchless_build(program);
  if (!build) return value;
  if (request.param == CL_PROGRAM_BUILD_OPTIONS) return string_info(build->options);
  if (request.param != CL_PROGRAM_BUILD_LOG) return value;
  if (build->failed_log) return string_info(*build->failed_log);
  return build->warnings_hidden ? string_info(without_warnings(text_info(value))) : value;
}

}  // namespace

GetInfo::Reply execute(Call& call, const GetInfo::Request& request) {
  if (is_handle_param(request.family, request.param)) throw ClError{CL_INVALID_VALUE};
  Session& s = call.session;
  switch (request.family) {
    case InfoFamily::context:
      return {native_info(clGetContextInfo, request, s.get<cl_context>(request.object))};
    case InfoFamily::command_queue:
      return {native_info(clGetCommandQueueInfo, request, s.get<cl_command_queue>(request.object))};
    case InfoFamily::mem_object:
      return {native_info(clGetMemObjectInfo, request, s.get<cl_mem>(request.object))};
    case InfoFamily::program:
      return {native_info(clGetProgramInfo, request, s.get<cl_program>(request.object))};
    case InfoFamily::program_build:
      return {program_build_info(s, request)};
    case InfoFamily::kernel:
      return {native_info(clGetKernelInfo, request, s.get<cl_kernel>(request.object))};
    case InfoFamily::kernel_work_group:
      return {native_info(clGetKernelWorkGroupInfo, request, s.get<cl_kernel>(request.object),
                          optional_device(s, request.device))};
    case InfoFamily::kernel_sub_group:
      return {sub_group_info(s.get<cl_kernel>(request.object), optional_device(s, request.device), request)};
    case InfoFamily::kernel_arg:
      return {native_info(clGetKernelArgInfo, request, s.get<cl_kernel>(request.object), request.arg_index)};
    case InfoFamily::event:
      return {native_info(clGetEventInfo, request, s.get<cl_event>(request.object))};
    case InfoFamily::event_profiling:
      return {native_info(clGetEventProfilingInfo, request, s.get<cl_event>(request.object))};
    case InfoFamily::event_timestamps:
      return {event_timestamps(s.get<cl_event>(request.object), request)};
    case InfoFamily::image:
      return {native_info(clGetImageInfo, request, image_of(s, request.object))};
  }
  throw ClError{CL_INVALID_VALUE};
}

}  // namespace hivecl::proxy
