// Kernel family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

_cl_kernel* new_kernel(_cl_program* program, ObjectId id) {
  auto* kernel = new _cl_kernel;
  kernel->connection = program->connection;
  kernel->id = id;
  kernel->program = Ref<_cl_program>(program);
  return kernel;
}

// Until kernels-parser knows each argument's kind, an argument the size of a handle whose
// value is a live buffer handle of this library is taken to be that buffer (DESIGN.md).
SetKernelArg::Request describe_arg(const _cl_kernel* kernel, cl_uint index, size_t size, const void* value) {
  SetKernelArg::Request request{.kernel = kernel->id, .index = index, .size = size};
  if (!value) {
    request.kind = ArgKind::no_value;
    return request;
  }
  if (size == sizeof(cl_mem)) {
    cl_mem candidate = nullptr;
    std::memcpy(&candidate, value, sizeof candidate);
    if (candidate && is_live(candidate, HandleKind::mem)) {
      if (candidate->connection != kernel->connection) throw ClError{CL_INVALID_MEM_OBJECT};
      request.kind = ArgKind::mem_object;
      request.object = candidate->id;
      return request;
    }
  }
  const auto* bytes = static_cast<const std::byte*>(value);
  request.kind = ArgKind::value;
  request.value.assign(bytes, bytes + size);
  return request;
}

// The largest value of the device's size_t (CL_DEVICE_ADDRESS_BITS wide).
uint64_t device_size_max(const _cl_device_id* device) {
  cl_uint bits = 64;
  const auto found = device->info.find(CL_DEVICE_ADDRESS_BITS);
  if (found != device->info.end() && found->second.value.size() == sizeof bits)
    std::memcpy(&bits, found->second.value.data(), sizeof bits);
  return bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
}

// Checked here because native runtimes (PoCL 3.1) run ranges past the end of size_t.
void check_range(const _cl_device_id* device, cl_uint work_dim, const size_t* global_offset,
                 const size_t* global_size) {
  const uint64_t max = device_size_max(device);
  for (cl_uint i = 0; i < work_dim; ++i) {
    if (global_size[i] > max) throw ClError{CL_INVALID_GLOBAL_WORK_SIZE};
    if (global_offset && global_offset[i] > max - global_size[i]) throw ClError{CL_INVALID_GLOBAL_OFFSET};
  }
}

std::vector<uint64_t> work_sizes(const size_t* sizes, cl_uint work_dim) {
  return sizes ? std::vector<uint64_t>(sizes, sizes + work_dim) : std::vector<uint64_t>{};
}

void enqueue_kernel(EnqueuedCommand& command, cl_kernel kernel, cl_uint work_dim, const size_t* global_offset,
                    const size_t* global_size, const size_t* local_size, cl_command_type type) {
  checked(kernel);
  if (kernel->program->context.get() != command.queue()->context.get()) throw ClError{CL_INVALID_CONTEXT};
  // Checked here: work_dim says how many sizes to read from the application's arrays.
  if (work_dim < 1 || work_dim > 3) throw ClError{CL_INVALID_WORK_DIMENSION};
  if (!global_size) throw ClError{CL_INVALID_GLOBAL_WORK_SIZE};
  check_range(command.queue()->device, work_dim, global_offset, global_size);
  command.connection()->call<EnqueueNDRangeKernel>(
      {.queue = command.queue()->id, .kernel = kernel->id, .work_dim = work_dim,
       .global_offset = work_sizes(global_offset, work_dim), .global_size = work_sizes(global_size, work_dim),
       .local_size = work_sizes(local_size, work_dim), .tail = command.tail()});
  command.complete(type);
}

}  // namespace

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char* kernel_name, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(program);
    if (!kernel_name) throw ClError{CL_INVALID_VALUE};
    const ObjectId id = program->connection->new_id();
    program->connection->call<CreateKernel>({.id = id, .program = program->id, .name = kernel_name});
    return publish(new_kernel(program, id));
  });
}

CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(cl_program program, cl_uint num_kernels, cl_kernel* kernels,
                                                         cl_uint* num_kernels_ret) {
  return guarded([&] {
    checked(program);
    size_t count = 0;
    InfoReply count_reply(sizeof count, &count, nullptr);
    remote_info(program->connection, InfoFamily::program, program->id, CL_PROGRAM_NUM_KERNELS, count_reply);
    if (kernels && num_kernels < count) throw ClError{CL_INVALID_VALUE};
    if (num_kernels_ret) *num_kernels_ret = static_cast<cl_uint>(count);
    if (!kernels) return;
    std::vector<ObjectId> ids(count);
    for (auto& id : ids) id = program->connection->new_id();
    program->connection->call<CreateKernelsInProgram>({.program = program->id, .ids = ids});
    for (size_t i = 0; i < count; ++i) kernels[i] = publish(new_kernel(program, ids[i]));
  });
}

CL_API_ENTRY cl_kernel CL_API_CALL clCloneKernel(cl_kernel source_kernel, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_kernel {
    checked(source_kernel);
    throw ClError{CL_INVALID_OPERATION};  // not yet: the OpenCL 1.2 completeness issue
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainKernel(cl_kernel kernel) {
  return guarded([&] { retain(kernel); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseKernel(cl_kernel kernel) {
  return guarded([&] { release(kernel); });
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
                                               const void* arg_value) {
  return guarded([&] {
    checked(kernel);
    kernel->connection->call<SetKernelArg>(describe_arg(kernel, arg_index, arg_size, arg_value));
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelInfo(cl_kernel kernel, cl_kernel_info param_name, size_t param_value_size,
                                                void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(kernel);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_KERNEL_REFERENCE_COUNT: return reply.scalar(kernel->refs.load());
      case CL_KERNEL_CONTEXT: return reply.scalar(static_cast<cl_context>(kernel->program->context.get()));
      case CL_KERNEL_PROGRAM: return reply.scalar(static_cast<cl_program>(kernel->program.get()));
      default: remote_info(kernel->connection, InfoFamily::kernel, kernel->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                                         cl_kernel_work_group_info param_name, size_t param_value_size,
                                                         void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(kernel);
    if (device && (checked(device)->connection != kernel->connection ||
                   !kernel->program->context->has_device(device)))
      throw ClError{CL_INVALID_DEVICE};
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    remote_info(kernel->connection, InfoFamily::kernel_work_group, kernel->id, param_name, reply,
                device ? device->id : no_object);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelArgInfo(cl_kernel kernel, cl_uint arg_index, cl_kernel_arg_info param_name,
                                                   size_t param_value_size, void* param_value,
                                                   size_t* param_value_size_ret) {
  return guarded([&] {
    checked(kernel);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    remote_info(kernel->connection, InfoFamily::kernel_arg, kernel->id, param_name, reply, no_object, arg_index);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel,
                                                       cl_uint work_dim, const size_t* global_work_offset,
                                                       const size_t* global_work_size, const size_t* local_work_size,
                                                       cl_uint num_events_in_wait_list,
                                                       const cl_event* event_wait_list, cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    enqueue_kernel(command, kernel, work_dim, global_work_offset, global_work_size, local_work_size,
                   CL_COMMAND_NDRANGE_KERNEL);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueTask(cl_command_queue command_queue, cl_kernel kernel,
                                              cl_uint num_events_in_wait_list, const cl_event* event_wait_list,
                                              cl_event* event) {
  return guarded([&] {
    EnqueuedCommand command(command_queue, num_events_in_wait_list, event_wait_list, event);
    const size_t one = 1;
    enqueue_kernel(command, kernel, 1, nullptr, &one, &one, CL_COMMAND_TASK);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNativeKernel(cl_command_queue command_queue, void(CL_CALLBACK*)(void*), void*,
                                                      size_t, cl_uint, const cl_mem*, const void**, cl_uint,
                                                      const cl_event*, cl_event*) {
  return guarded([&] {
    checked(command_queue);
    throw ClError{CL_INVALID_OPERATION};  // CL_EXEC_NATIVE_KERNEL is not reported: host code cannot run remotely
  });
}

// Sub-groups are not offered (CL_DEVICE_MAX_NUM_SUB_GROUPS is 0).
CL_API_ENTRY cl_int CL_API_CALL clGetKernelSubGroupInfo(cl_kernel kernel, cl_device_id, cl_kernel_sub_group_info,
                                                        size_t, const void*, size_t, void*, size_t*) {
  return guarded([&] {
    checked(kernel);
    throw ClError{CL_INVALID_OPERATION};
  });
}
