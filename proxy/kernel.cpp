// Kernel family on the proxy side.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "log.hpp"
#include "proxy/executors.hpp"
#include "proxy/vendors.hpp"
#include "work_size.hpp"

namespace hivecl::proxy {

using namespace protocol;

namespace {

// What argument `index` is, from clGetKernelArgInfo; unknown when the device cannot say.
ArgClass classify(cl_kernel kernel, cl_uint index) {
  cl_kernel_arg_address_qualifier address = 0;
  cl_kernel_arg_type_qualifier qualifiers = 0;
  size_t type_size = 0;
  if (clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, nullptr) ||
      clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof qualifiers, &qualifiers, nullptr) ||
      clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, 0, nullptr, &type_size))
    return ArgClass::unknown;
  const std::string type = text_info(query_info([&](size_t n, void* v, size_t* r) {
    return clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_NAME, n, v, r);
  }));
  if (qualifiers & CL_KERNEL_ARG_TYPE_PIPE) return ArgClass::pipe;
  // Pointers are spelled with '*'; images sit in the global (clang) or private address space.
  if (type.starts_with("image") && type.find('*') == std::string::npos) return ArgClass::image;
  if (type == "sampler_t") return ArgClass::sampler;
  switch (address) {
    case CL_KERNEL_ARG_ADDRESS_GLOBAL:
    case CL_KERNEL_ARG_ADDRESS_CONSTANT: return ArgClass::memory;
    case CL_KERNEL_ARG_ADDRESS_LOCAL: return ArgClass::local;
    default: return ArgClass::value;
  }
}

std::vector<ArgClass> classify_all(cl_kernel kernel, cl_uint count) {
  std::vector<ArgClass> classes(count);
  for (cl_uint i = 0; i < count; ++i) classes[i] = classify(kernel, i);
  return classes;
}

bool all_known(const std::vector<ArgClass>& classes) {
  return std::find(classes.begin(), classes.end(), ArgClass::unknown) == classes.end();
}

// The first device's binary of `program` (programs made from binaries or by linking have no source).
Bytes first_binary(cl_program program) {
  const Bytes sizes = query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, n, v, r);
  });
  size_t size = 0;
  if (sizes.size() < sizeof size) return {};
  std::memcpy(&size, sizes.data(), sizeof size);
  Bytes binary(size);
  std::vector<unsigned char*> pointers(sizes.size() / sizeof size, nullptr);  // NULL: that device's is not wanted
  pointers.front() = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, pointers.size() * sizeof(unsigned char*), pointers.data(),
                       nullptr) != CL_SUCCESS)
    return {};
  return binary;
}

// A private, unbuilt program with the code of `program`: from its source, or else from its binary.
cl_program twin_program(cl_program program, cl_context context, cl_device_id device) {
  const std::string source = text_info(query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramInfo(program, CL_PROGRAM_SOURCE, n, v, r);
  }));
  cl_int status = CL_SUCCESS;
  if (!source.empty()) {
    const char* text = source.c_str();
    const cl_program twin = clCreateProgramWithSource(context, 1, &text, nullptr, &status);
    return status == CL_SUCCESS ? twin : nullptr;
  }
  const Bytes binary = first_binary(program);
  if (binary.empty()) return nullptr;
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const size_t length = binary.size();
  const cl_program twin = clCreateProgramWithBinary(context, 1, &device, &length, &bytes, nullptr, &status);
  return status == CL_SUCCESS ? twin : nullptr;
}

// Argument information needs -cl-kernel-arg-info on some devices (PoCL): a private build of the
// same code (source or binary) with the same options and that flag tells, without changing the
// application's program.
std::vector<ArgClass> classify_from_rebuild(cl_kernel kernel, cl_uint count) {
  cl_program program = nullptr;
  check(clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof program, &program, nullptr));
  cl_context context = nullptr;
  check(clGetProgramInfo(program, CL_PROGRAM_CONTEXT, sizeof context, &context, nullptr));
  cl_device_id device = nullptr;
  check(clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof device, &device, nullptr));
  const std::string options = text_info(query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, n, v, r);
  })) + " -cl-kernel-arg-info";
  const std::string name = text_info(query_info([&](size_t n, void* v, size_t* r) {
    return clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, n, v, r);
  }));
  std::vector<ArgClass> classes(count, ArgClass::unknown);
  const cl_program described = twin_program(program, context, device);
  if (!described) return classes;
  if (clBuildProgram(described, 1, &device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
    cl_int status = CL_SUCCESS;
    cl_kernel twin = clCreateKernel(described, name.c_str(), &status);
    if (status == CL_SUCCESS) {
      classes = classify_all(twin, count);
      clReleaseKernel(twin);
    }
  }
  clReleaseProgram(described);
  return classes;
}

KernelSignature signature(cl_kernel kernel, bool describe_args) {
  KernelSignature result;
  check(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof result.num_args, &result.num_args, nullptr));
  if (!describe_args) return result;
  result.classes = classify_all(kernel, result.num_args);
  if (!all_known(result.classes)) result.classes = classify_from_rebuild(kernel, result.num_args);
  return result;
}

cl_int set_buffer_arg(Session& session, cl_kernel kernel, const KernelArg& arg) {
  cl_mem mem = nullptr;
  try {
    if (arg.object != no_object) mem = session.get<cl_mem>(arg.object);
  } catch (const ClError& error) {
    return error.code;  // released since it was set
  }
  return clSetKernelArg(kernel, arg.index, sizeof mem, &mem);
}

cl_int set_svm_arg(const Session& session, cl_kernel kernel, const KernelArg& arg) {
  void* address = nullptr;
  try {
    if (arg.object != no_object) address = session.svm_address({arg.object, arg.offset}, CL_INVALID_ARG_VALUE);
  } catch (const ClError& error) {
    return error.code;  // freed since it was set
  }
  return clSetKernelArgSVMPointer(kernel, arg.index, address);
}

// The clSetKernelArg the client recorded; a failure is the launch's CL_INVALID_KERNEL_ARGS
// (the argument is not validly specified), as README.md explains.
void apply(Session& session, cl_kernel kernel, const KernelArg& arg) {
  cl_int status = CL_SUCCESS;
  switch (arg.kind) {
    case ArgKind::value:
      status = arg.value.size() == arg.size ? clSetKernelArg(kernel, arg.index, arg.size, arg.value.data())
                                            : CL_INVALID_ARG_SIZE;
      break;
    case ArgKind::mem_object:
      status = set_buffer_arg(session, kernel, arg);
      break;
    case ArgKind::no_value:
      status = clSetKernelArg(kernel, arg.index, arg.size, nullptr);
      break;
    case ArgKind::sampler:
      status = set_sampler_arg(session, kernel, arg);
      break;
    case ArgKind::svm_pointer:
      status = set_svm_arg(session, kernel, arg);
      break;
    default:
      status = CL_INVALID_VALUE;
  }
  if (status != CL_SUCCESS) {
    log::debug("kernel argument ", arg.index, " refused by the device: ", status);
    throw ClError{CL_INVALID_KERNEL_ARGS};
  }
}

}  // namespace

SetKernelExecInfo::Reply execute(Call& call, const SetKernelExecInfo::Request& request) {
  const cl_kernel kernel = call.session.get<cl_kernel>(request.kernel);
  std::vector<void*> pointers;  // none: those set before no longer apply
  for (const SvmAddress& address : request.pointers)
    pointers.push_back(call.session.svm_address(address, CL_INVALID_VALUE));
  check(clSetKernelExecInfo(kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, pointers.size() * sizeof(void*),
                            pointers.empty() ? nullptr : pointers.data()));
  return {};
}

CreateKernel::Reply execute(Call& call, const CreateKernel::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_program program = session.get<cl_program>(request.program);
  cl_int status = CL_SUCCESS;
  const cl_kernel kernel = clCreateKernel(program, request.name.c_str(), &status);
  check(status);
  session.add(request.id, ObjectKind::kernel, kernel);
  return {.signature = signature(kernel, request.describe_args)};
}

CreateKernelsInProgram::Reply execute(Call& call, const CreateKernelsInProgram::Request& request) {
  Session& session = call.session;
  const cl_program program = session.get<cl_program>(request.program);
  for (ObjectId id : request.ids) session.check_fresh(id);
  cl_uint count = 0;
  check(clCreateKernelsInProgram(program, 0, nullptr, &count));
  if (request.ids.size() < count) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_kernel> kernels(count);
  check(clCreateKernelsInProgram(program, count, kernels.data(), nullptr));
  CreateKernelsInProgram::Reply reply;
  for (cl_uint i = 0; i < count; ++i) {
    const Bytes name = query_info([&](size_t n, void* v, size_t* r) {
      return clGetKernelInfo(kernels[i], CL_KERNEL_FUNCTION_NAME, n, v, r);
    });
    reply.names.emplace_back(reinterpret_cast<const char*>(name.data()));
    reply.signatures.push_back(signature(kernels[i], request.describe_args));
    session.add(request.ids[i], ObjectKind::kernel, kernels[i]);
  }
  return reply;
}

CloneKernel::Reply execute(Call& call, const CloneKernel::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  cl_int status = CL_SUCCESS;
  const cl_kernel clone = clCloneKernel(session.get<cl_kernel>(request.source), &status);
  check(status);
  session.add(request.id, ObjectKind::kernel, clone);
  return {};
}

DescribeKernelArgs::Reply execute(Call& call, const DescribeKernelArgs::Request& request) {
  return signature(call.session.get<cl_kernel>(request.kernel), true);
}

ApplyKernelArgs::Reply execute(Call& call, const ApplyKernelArgs::Request& request) {
  const cl_kernel kernel = call.session.get<cl_kernel>(request.kernel);
  for (const KernelArg& arg : request.args) apply(call.session, kernel, arg);
  return {};
}

namespace {

// PoCL 3.1 keeps a launch's number of work-groups in 32 bits: from 2^32 groups on it aborts
// ("max_wgs > 0") or dies of SIGILL, taking the proxy and its other clients down
// (docs/FINDINGS.md). Such a launch to a PoCL device fails instead; other runtimes are asked.
bool too_many_groups_for_runtime(cl_command_queue queue, const EnqueueNDRangeKernel::Request& request) {
  if (request.global_size.empty() ||
      work_groups_at_most(request.global_size.data(), request.local_size.empty() ? nullptr : request.local_size.data(),
                          request.work_dim) <= UINT32_MAX)
    return false;
  cl_device_id device = nullptr;
  return clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr) == CL_SUCCESS &&
         platform_name_of(device) == "Portable Computing Language";
}

void enqueue_kernel(Call& call, const EnqueueNDRangeKernel::Request& request) {
  Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_kernel kernel = call.session.get<cl_kernel>(request.kernel);
  const auto sized = [&](const WorkSizes& values) {
    return values.empty() || values.size() == request.work_dim;
  };
  if (request.work_dim > 3 || !sized(request.global_offset) || !sized(request.global_size) ||
      !sized(request.local_size))
    throw ClError{CL_INVALID_VALUE};
  if (!request.global_size.empty() && work_items_overflow(request.global_size.data(), request.work_dim))
    throw ClError{CL_INVALID_GLOBAL_WORK_SIZE};
  if (too_many_groups_for_runtime(enqueue.queue, request)) throw ClError{CL_OUT_OF_RESOURCES};
  for (const KernelArg& arg : request.args) apply(call.session, kernel, arg);
  const auto pointer = [](const WorkSizes& values) -> const size_t* {
    static_assert(sizeof(size_t) == sizeof(uint64_t));
    return values.empty() ? nullptr : reinterpret_cast<const size_t*>(values.data());
  };
  LaunchGate& gate = call.session.launch_gate();
  if (const cl_event closed = gate.before_launch(enqueue.queue, enqueue.facts.gated)) enqueue.waits.push_back(closed);
  cl_event event = nullptr;
  const cl_int status = clEnqueueNDRangeKernel(enqueue.queue, kernel, request.work_dim, pointer(request.global_offset),
                                               pointer(request.global_size), pointer(request.local_size),
                                               enqueue.wait_count(), enqueue.wait_list(),
                                               event_wanted(request.tail.event, event));
  gate.after_launch(status == CL_SUCCESS);
  check(status);
  if (!call.caller_waits) expect_wait(enqueue.queue);
  keep_event(call, request.tail.event, event);
}

}  // namespace

EnqueueNDRangeKernel::Reply execute(Call& call, const EnqueueNDRangeKernel::Request& request) {
  try {
    enqueue_kernel(call, request);
  } catch (const ClError& error) {
    if (event_handed_out_unanswered(call.session, request.detached))
      keep_failed_event(call, request.queue, request.tail.event, error.code);
    throw;
  }
  return {};
}

}  // namespace hivecl::proxy
