// Kernel family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "icd/api.hpp"
#include "icd/spanning.hpp"
#include "icd/svm.hpp"
#include "kernels_parser.hpp"
#include "log.hpp"
#include "work_size.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

std::unique_ptr<_cl_kernel> new_kernel(_cl_program* program, ObjectId id) {
  auto kernel = std::make_unique<_cl_kernel>();
  kernel->connection = program->connection;
  kernel->id = id;
  kernel->program = Ref<_cl_program>(program);
  return kernel;
}

ArgClass class_of(kernels_parser::ArgKind kind) {
  switch (kind) {
    case kernels_parser::ArgKind::global_memory:
    case kernels_parser::ArgKind::constant_memory: return ArgClass::memory;
    case kernels_parser::ArgKind::local_memory: return ArgClass::local;
    case kernels_parser::ArgKind::image: return ArgClass::image;
    case kernels_parser::ArgKind::sampler: return ArgClass::sampler;
    case kernels_parser::ArgKind::pipe: return ArgClass::pipe;
    case kernels_parser::ArgKind::by_value: return ArgClass::value;
  }
  return ArgClass::unknown;
}

// A memory argument the kernel cannot write: a __constant buffer, a read_only image.
bool reads_only(const kernels_parser::Argument& argument) {
  return argument.kind == kernels_parser::ArgKind::constant_memory ||
         (argument.kind == kernels_parser::ArgKind::image && argument.access == kernels_parser::Access::read_only);
}

// The argument kinds: from the parsed source where it is certain and agrees with the device on
// their number; otherwise from the proxy (clGetKernelArgInfo), never guessed.
void learn_signature(_cl_kernel* kernel, const kernels_parser::Kernel* parsed, const KernelSignature& remote) {
  if (parsed && parsed->arguments.size() == remote.num_args) {
    for (const kernels_parser::Argument& argument : parsed->arguments)
      kernel->args.push_back({.arg_class = class_of(argument.kind), .value_size = argument.size,
                              .read_only = reads_only(argument)});
    return;
  }
  const KernelSignature described = remote.classes.size() == remote.num_args
                                        ? remote
                                        : kernel->connection->call<DescribeKernelArgs>({.kernel = kernel->id});
  if (described.classes.size() != described.num_args) throw ClError{CL_OUT_OF_RESOURCES};
  for (ArgClass arg_class : described.classes) kernel->args.push_back({.arg_class = arg_class});
}

cl_mem handle_value(size_t size, const void* value) {
  if (size != sizeof(cl_mem)) throw ClError{CL_INVALID_ARG_SIZE};
  cl_mem mem = nullptr;
  if (value) std::memcpy(&mem, value, sizeof mem);
  return mem;
}

// A buffer argument: a buffer of this kernel's proxy (or of its spanning context), or NULL.
KernelArg memory_arg(const _cl_kernel* kernel, const KernelArg& base, const void* value) {
  const cl_mem mem = handle_value(base.size, value);
  if (mem && (!is_live(mem, HandleKind::mem) ||
              (mem->connection != kernel->connection && mem->context.get() != kernel->program->context.get())))
    throw ClError{CL_INVALID_MEM_OBJECT};
  KernelArg arg = base;
  arg.kind = ArgKind::mem_object;
  arg.object = mem ? mem->id : no_object;
  return arg;
}

KernelArg value_arg(const KernelArgSlot& slot, const KernelArg& base, const void* value) {
  if (!value) throw ClError{CL_INVALID_ARG_VALUE};
  if (slot.value_size && *slot.value_size != base.size) throw ClError{CL_INVALID_ARG_SIZE};
  KernelArg arg = base;
  const auto* bytes = static_cast<const std::byte*>(value);
  arg.value.assign(bytes, bytes + base.size);
  return arg;
}

// What clSetKernelArg records, checked as the specification says; errors only the device can
// see (a by-value size the parser does not know) come at the launch (README.md).
KernelArg describe_arg(const _cl_kernel* kernel, cl_uint index, size_t size, const void* value) {
  if (index >= kernel->args.size()) throw ClError{CL_INVALID_ARG_INDEX};
  const KernelArgSlot& slot = kernel->args[index];
  const KernelArg base{.index = index, .size = size};
  switch (slot.arg_class) {
    case ArgClass::memory: return memory_arg(kernel, base, value);
    case ArgClass::image: return image_arg(kernel, base, value);
    case ArgClass::sampler: return sampler_arg(kernel, base, value);
    case ArgClass::pipe:
      // HiveCL offers no pipes: no memory object can be one.
      handle_value(size, value);
      throw ClError{CL_INVALID_MEM_OBJECT};
    case ArgClass::local:
      if (value) throw ClError{CL_INVALID_ARG_VALUE};
      if (size == 0) throw ClError{CL_INVALID_ARG_SIZE};
      return KernelArg{.index = index, .kind = ArgKind::no_value, .size = size};
    case ArgClass::value: return value_arg(slot, base, value);
    default:
      log::warn("the device could not describe argument ", index, " of a kernel");
      throw ClError{CL_OUT_OF_RESOURCES};
  }
}

// The arguments set since the kernel's last launch; CL_INVALID_KERNEL_ARGS if one never was.
std::vector<KernelArg> changed_args(const _cl_kernel* kernel) {
  std::vector<KernelArg> changed;
  for (const KernelArgSlot& slot : kernel->args) {
    if (!slot.current) throw ClError{CL_INVALID_KERNEL_ARGS};
    if (!(slot.launched && *slot.launched == *slot.current)) changed.push_back(*slot.current);
  }
  return changed;
}

// Gives the proxy the arguments set since the last launch, for a query that depends on them.
// A refused argument stays pending: the launch reports it (CL_INVALID_KERNEL_ARGS).
void apply_changed_args(_cl_kernel* kernel) {
  std::lock_guard lock(kernel->args_mutex);
  std::vector<KernelArg> args;
  for (const KernelArgSlot& slot : kernel->args)
    if (slot.current && !(slot.launched && *slot.launched == *slot.current)) args.push_back(*slot.current);
  if (args.empty()) return;
  try {
    kernel->connection->call<ApplyKernelArgs>({.kernel = kernel->id, .args = args});
  } catch (const ClError& error) {
    if (error.code != CL_INVALID_KERNEL_ARGS) throw;
    return;
  }
  for (KernelArg& arg : args) kernel->args[arg.index].launched = std::move(arg);
}

// Spanning contexts: the application's arguments of `kernel` as `part` (the kernel on the
// launch's connection) must hold them, each buffer's or image's id there, its data brought there
// first, and each sampler's id there.
void translate_args(_cl_kernel* kernel, _cl_kernel* part, EnqueuedCommand& command) {
  for (size_t i = 0; i < kernel->args.size(); ++i) {
    const KernelArgSlot& slot = kernel->args[i];
    std::optional<KernelArg> arg = slot.current;
    const bool memory = slot.arg_class == ArgClass::memory || slot.arg_class == ArgClass::image;
    if (arg && memory && arg->object != no_object) {
      if (!is_live(slot.handle, HandleKind::mem)) throw ClError{CL_INVALID_KERNEL_ARGS};  // released since
      arg->object = use_mem(static_cast<const _cl_mem*>(slot.handle), command,
                            slot.read_only ? Access::reads : Access::reads_writes);
    } else if (arg && slot.arg_class == ArgClass::sampler) {
      if (!is_live(slot.handle, HandleKind::sampler)) throw ClError{CL_INVALID_KERNEL_ARGS};
      arg->object = static_cast<const _cl_sampler*>(slot.handle)->id_on(command.connection());
    }
    part->args[i].current = std::move(arg);
  }
}

// Checked here because native runtimes (PoCL 3.1) run ranges past the end of size_t.
void check_range(const _cl_device_id* device, cl_uint work_dim, const size_t* global_offset,
                 const size_t* global_size) {
  const uint64_t max = device->size_max;
  if (work_items_overflow(global_size, work_dim)) throw ClError{CL_INVALID_GLOBAL_WORK_SIZE};
  for (cl_uint i = 0; i < work_dim; ++i) {
    if (global_size[i] > max) throw ClError{CL_INVALID_GLOBAL_WORK_SIZE};
    if (global_offset && global_offset[i] > max - global_size[i]) throw ClError{CL_INVALID_GLOBAL_OFFSET};
  }
}

// Enough for the shapes one kernel is launched with in a loop; the oldest is forgotten.
constexpr size_t max_accepted_shapes = 16;

LaunchShape shape_of(const EnqueuedCommand& command, cl_uint work_dim, const size_t* global_offset,
                     const size_t* global_size, const size_t* local_size) {
  LaunchShape shape{.queue = command.queue()->id, .work_dim = work_dim, .offset = global_offset != nullptr,
                    .local_size = WorkSizes(local_size, work_dim)};
  for (cl_uint i = 0; local_size && i < work_dim; ++i)
    if (local_size[i] != 0 && global_size[i] % local_size[i] == 0) shape.uniform |= 1u << i;
  return shape;
}

// Whether the proxy is sure to accept this launch: it accepted its shape before, and every
// argument that changed kept its kind and size (a new local size may not fit the device).
bool sure_to_be_accepted(const _cl_kernel* kernel, const LaunchShape& shape, const std::vector<KernelArg>& changed,
                         const size_t* global_size) {
  if (std::find(kernel->accepted_shapes.begin(), kernel->accepted_shapes.end(), shape) ==
      kernel->accepted_shapes.end())
    return false;
  if (std::find(global_size, global_size + shape.work_dim, size_t{0}) != global_size + shape.work_dim) return false;
  return std::all_of(changed.begin(), changed.end(), [&](const KernelArg& arg) {
    const auto& launched = kernel->args[arg.index].launched;
    return launched && launched->kind == arg.kind && launched->size == arg.size;
  });
}

// A launch the proxy is sure to accept is sent without waiting for its answer (VOCL and
// rCUDA do the same for kernel launches), and the proxy answers it only if it fails: its
// event then reports the failure, and the connection's kernels resend every argument.
void launch_detached(EnqueuedCommand& command, EnqueueNDRangeKernel::Request& request) {
  request.detached = true;
  command.connection()->send_detached<EnqueueNDRangeKernel>(request);
}

// Sends the launch of `kernel` (its arguments' lock held) with what changed since its last one.
void launch(EnqueuedCommand& command, _cl_kernel* kernel, cl_uint work_dim, const size_t* global_offset,
            const size_t* global_size, const size_t* local_size, cl_command_type type) {
  if (const uint64_t failures = command.connection()->detached_failures(); kernel->failures_seen != failures) {
    for (KernelArgSlot& slot : kernel->args) slot.launched.reset();
    kernel->accepted_shapes.clear();
    kernel->failures_seen = failures;
  }
  EnqueueNDRangeKernel::Request request{
      .queue = command.queue()->id, .kernel = kernel->id, .args = changed_args(kernel), .work_dim = work_dim,
      .global_offset = WorkSizes(global_offset, work_dim), .global_size = WorkSizes(global_size, work_dim),
      .local_size = WorkSizes(local_size, work_dim), .tail = command.tail()};
  if (command.connection()->in_process()) {
    // Runs at once in this thread, answered only if it fails (then it throws here, as a call).
    request.detached = true;
    command.connection()->send_detached<EnqueueNDRangeKernel>(request);
  } else if (const LaunchShape shape = shape_of(command, work_dim, global_offset, global_size, local_size);
             sure_to_be_accepted(kernel, shape, request.args, global_size)) {
    launch_detached(command, request);
  } else {
    command.connection()->call<EnqueueNDRangeKernel>(request);
    if (kernel->accepted_shapes.size() == max_accepted_shapes) kernel->accepted_shapes.erase(kernel->accepted_shapes.begin());
    kernel->accepted_shapes.push_back(shape);
  }
  for (KernelArg& arg : request.args) kernel->args[arg.index].launched = std::move(arg);
  command.complete(type);
}

void enqueue_kernel(EnqueuedCommand& command, cl_kernel kernel, cl_uint work_dim, const size_t* global_offset,
                    const size_t* global_size, const size_t* local_size, cl_command_type type) {
  checked(kernel);
  if (kernel->program->context.get() != command.queue()->context.get()) throw ClError{CL_INVALID_CONTEXT};
  // Checked here: work_dim says how many sizes to read from the application's arrays.
  if (work_dim < 1 || work_dim > 3) throw ClError{CL_INVALID_WORK_DIMENSION};
  // OpenCL 2.1 and later: no global size is an empty range, which trivially succeeds.
  static constexpr size_t empty_range[3] = {0, 0, 0};
  if (!global_size) global_size = empty_range;
  check_range(command.queue()->device, work_dim, global_offset, global_size);
  // Held until the proxy has the launch: its arguments reach it in the order they were set.
  std::lock_guard lock(kernel->args_mutex);
  // Spanning contexts: the kernel on the queue's connection, given the application's arguments.
  const bool spans = kernel->program->context->spans();
  _cl_kernel* part = spans ? kernel->part_on(command.connection()) : kernel;
  std::unique_lock part_lock(part->args_mutex, std::defer_lock);
  if (part != kernel) part_lock.lock();
  if (spans) translate_args(kernel, part, command);
  launch(command, part, work_dim, global_offset, global_size, local_size, type);
}

// Spanning contexts: the kernel made on the program's other parts, where it was built. Their
// argument kinds are the application kernel's (the same source).
void add_parts(_cl_kernel* kernel, const std::string& name) {
  _cl_program* program = kernel->program.get();
  for (const Replica& program_part : program->replicas) {
    const ObjectId id = program_part.connection->new_id();
    try {
      program_part.connection->call<CreateKernel>(
          {.id = id, .program = program_part.id, .name = name, .describe_args = false});
    } catch (const ClError& error) {
      if (error.code != CL_INVALID_PROGRAM_EXECUTABLE) throw;
      continue;  // not built for the devices there; a launch there says so
    }
    auto part = new_kernel(program, id);
    part->connection = program_part.connection;
    part->args = kernel->args;
    for (KernelArgSlot& slot : part->args) slot.launched.reset();  // a clone's record says what its source holds
    kernel->replicas.push_back({program_part.connection, id});
    kernel->parts.push_back(std::move(part));
  }
}

std::string kernel_name(_cl_kernel* kernel) {
  size_t size = 0;
  check(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size));
  std::string name(size, '\0');
  check(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, name.data(), nullptr));
  name.resize(name.find('\0'));
  return name;
}

}  // namespace

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char* kernel_name, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(program);
    if (!kernel_name) throw ClError{CL_INVALID_VALUE};
    const auto parsed = program->parsed_kernels();
    const kernels_parser::Kernel* known = parsed ? parsed->certain_kernel(kernel_name) : nullptr;
    const ObjectId id = program->connection->new_id();
    const auto reply = program->connection->call<CreateKernel>(
        {.id = id, .program = program->id, .name = kernel_name, .describe_args = known == nullptr});
    auto kernel = new_kernel(program, id);
    learn_signature(kernel.get(), known, reply.signature);
    add_parts(kernel.get(), kernel_name);
    return publish(kernel.release());
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
    const auto parsed = program->parsed_kernels();
    std::vector<ObjectId> ids(count);
    for (auto& id : ids) id = program->connection->new_id();
    const auto reply = program->connection->call<CreateKernelsInProgram>(
        {.program = program->id, .ids = ids, .describe_args = !parsed || !parsed->certain});
    if (reply.names.size() != count || reply.signatures.size() != count) throw ClError{CL_OUT_OF_RESOURCES};
    std::vector<std::unique_ptr<_cl_kernel>> created;
    for (size_t i = 0; i < count; ++i) {
      created.push_back(new_kernel(program, ids[i]));
      learn_signature(created.back().get(), parsed ? parsed->certain_kernel(reply.names[i]) : nullptr,
                      reply.signatures[i]);
      add_parts(created.back().get(), reply.names[i]);
    }
    for (size_t i = 0; i < count; ++i) kernels[i] = publish(created[i].release());
  });
}

CL_API_ENTRY cl_kernel CL_API_CALL clCloneKernel(cl_kernel source_kernel, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(source_kernel);
    auto clone = new_kernel(source_kernel->program.get(), source_kernel->connection->new_id());
    // Under the lock, so the arguments the proxy clones are those the copied record says it has.
    std::lock_guard lock(source_kernel->args_mutex);
    source_kernel->connection->call<CloneKernel>({.id = clone->id, .source = source_kernel->id});
    clone->args = source_kernel->args;
    clone->accepted_shapes = source_kernel->accepted_shapes;
    clone->failures_seen = source_kernel->failures_seen;  // in doubt if its source is
    // Spanning contexts: the parts are made anew from the source (the clone's record of the
    // arguments is the application's, and every part's proxy gets them at its first launch).
    if (!source_kernel->parts.empty()) add_parts(clone.get(), kernel_name(source_kernel));
    return publish(clone.release());
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
    std::lock_guard lock(kernel->args_mutex);
    kernel->args[arg_index].current = describe_arg(kernel, arg_index, arg_size, arg_value);
    // Spanning contexts translate the buffer for each launch's part (translate_args).
    const void* handle = nullptr;
    if (arg_value && arg_size == sizeof handle) std::memcpy(&handle, arg_value, sizeof handle);
    kernel->args[arg_index].handle = handle;
  });
}

// HiveCL can give a device only addresses in its SVM allocations (the proxy checks them too).
CL_API_ENTRY cl_int CL_API_CALL clSetKernelArgSVMPointer(cl_kernel kernel, cl_uint arg_index, const void* arg_value) {
  return guarded([&] {
    checked(kernel);
    std::lock_guard lock(kernel->args_mutex);
    if (arg_index >= kernel->args.size()) throw ClError{CL_INVALID_ARG_INDEX};
    if (kernel->args[arg_index].arg_class != ArgClass::memory) throw ClError{CL_INVALID_ARG_VALUE};
    KernelArg arg{.index = arg_index, .kind = ArgKind::svm_pointer, .size = sizeof arg_value};
    if (arg_value) {
      const std::optional<SvmRegion> region = find_svm(kernel->program->context.get(), arg_value, true);
      if (!region) throw ClError{CL_INVALID_ARG_VALUE};
      arg.object = region->buffer->id;
      arg.offset = region->offset;
    }
    kernel->args[arg_index].current = std::move(arg);
    kernel->args[arg_index].handle = nullptr;
  });
}

namespace {

// CL_KERNEL_EXEC_INFO_SVM_PTRS: allocations the kernel reaches through pointers stored in memory
// (none: those set before no longer apply).
void set_svm_pointers(_cl_kernel* kernel, size_t value_size, const void* value) {
  if (value_size % sizeof(void*) != 0 || (value_size != 0 && !value)) throw ClError{CL_INVALID_VALUE};
  std::vector<const void*> pointers(value_size / sizeof(void*));
  if (value_size != 0) std::memcpy(pointers.data(), value, value_size);
  SetKernelExecInfo::Request request{.kernel = kernel->id};
  for (const void* pointer : pointers) {
    const std::optional<SvmRegion> region = find_svm(kernel->program->context.get(), pointer, true);
    if (!region) throw ClError{CL_INVALID_VALUE};
    request.pointers.push_back({.allocation = region->buffer->id, .offset = region->offset});
  }
  kernel->connection->call<SetKernelExecInfo>(request);
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clSetKernelExecInfo(cl_kernel kernel, cl_kernel_exec_info param_name,
                                                    size_t param_value_size, const void* param_value) {
  return guarded([&] {
    checked(kernel);
    if (!supports_svm(kernel->program->context.get())) throw ClError{CL_INVALID_OPERATION};
    switch (param_name) {
      case CL_KERNEL_EXEC_INFO_SVM_PTRS: return set_svm_pointers(kernel, param_value_size, param_value);
      case CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM: {
        if (param_value_size != sizeof(cl_bool) || !param_value) throw ClError{CL_INVALID_VALUE};
        cl_bool wanted = CL_FALSE;
        std::memcpy(&wanted, param_value, sizeof wanted);
        // No HiveCL device shares the system's memory with the host.
        if (wanted) throw ClError{CL_INVALID_OPERATION};
        return;
      }
      default: throw ClError{CL_INVALID_VALUE};
    }
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

namespace {

// The kernel on `device`'s connection (the only one unless its context spans several), for a
// query about the kernel on that device (none named: the kernel's only device).
_cl_kernel* part_for_device(cl_kernel kernel, cl_device_id device) {
  checked(kernel);
  if (!device) return kernel;
  if (!kernel->program->context->has_device(checked(device))) throw ClError{CL_INVALID_DEVICE};
  try {
    return kernel->part_on(device->connection);
  } catch (const ClError&) {
    throw ClError{CL_INVALID_DEVICE};
  }
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                                         cl_kernel_work_group_info param_name, size_t param_value_size,
                                                         void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    _cl_kernel* part = part_for_device(kernel, device);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    if (param_name == CL_KERNEL_LOCAL_MEM_SIZE) apply_changed_args(part);
    remote_info(part->connection, InfoFamily::kernel_work_group, part->id, param_name, reply,
                device ? device->id : no_object);
  });
}

// The input value is a local work size (one to three size_t) or a sub-group count (one); the
// native runtime checks it, and answers first whether the device has sub-groups at all. A longer
// input reaches it as long, up to max_sub_group_query_bytes, but zeros past three size_t (never
// valid, so never read). The value size goes too: CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT
// answers in as many dimensions as it holds size_t.
CL_API_ENTRY cl_int CL_API_CALL clGetKernelSubGroupInfo(cl_kernel kernel, cl_device_id device,
                                                        cl_kernel_sub_group_info param_name, size_t input_value_size,
                                                        const void* input_value, size_t param_value_size,
                                                        void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    _cl_kernel* part = part_for_device(kernel, device);
    Bytes input;
    if (input_value) {
      const auto* bytes = static_cast<const std::byte*>(input_value);
      input.assign(bytes, bytes + std::min(input_value_size, 3 * sizeof(size_t)));
      input.resize(std::min<size_t>(input_value_size, max_sub_group_query_bytes));
    }
    const size_t value_size = param_value ? std::min<size_t>(param_value_size, max_sub_group_query_bytes) : 0;
    const auto answer = part->connection->call<GetInfo>({.family = InfoFamily::kernel_sub_group,
                                                         .object = part->id,
                                                         .device = device ? device->id : no_object,
                                                         .param = param_name,
                                                         .input = std::move(input),
                                                         .value_size = static_cast<uint32_t>(value_size)});
    InfoReply(param_value_size, param_value, param_value_size_ret).bytes(answer.value.data(), answer.value.size());
  });
}

// cl_khr_subgroups' name for the same query (the extension is offered where the device has it).
CL_API_ENTRY cl_int CL_API_CALL clGetKernelSubGroupInfoKHR(cl_kernel kernel, cl_device_id device,
                                                           cl_kernel_sub_group_info param_name,
                                                           size_t input_value_size, const void* input_value,
                                                           size_t param_value_size, void* param_value,
                                                           size_t* param_value_size_ret) {
  return clGetKernelSubGroupInfo(kernel, device, param_name, input_value_size, input_value, param_value_size,
                                 param_value, param_value_size_ret);
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
