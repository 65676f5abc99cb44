// Program family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "icd/api.hpp"
#include "icd/callbacks.hpp"
#include "icd/spanning.hpp"
#include "kernels_parser.hpp"
#include "protocol/program_binary.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

// The devices a build applies to: a subset of the program's, or all of them (empty).
std::vector<cl_device_id> build_devices(const _cl_program* program, cl_uint num_devices,
                                        const cl_device_id* device_list) {
  if ((num_devices == 0) != (device_list == nullptr)) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_device_id> devices;
  for (cl_uint i = 0; i < num_devices; ++i) {
    checked(device_list[i]);
    if (std::find(program->devices.begin(), program->devices.end(), device_list[i]) == program->devices.end())
      throw ClError{CL_INVALID_DEVICE};
    devices.push_back(device_list[i]);
  }
  return devices;
}

// Runs `call(connection, program id there, ids of `devices` there)` on each connection of the
// program (one, unless its context spans several: spanning.hpp) that has some of `devices`, or
// on each when `devices` is empty (all of the program's devices). The first error is thrown
// once every connection ran.
template <class Call>
void on_each_part(_cl_program* program, const std::vector<cl_device_id>& devices, Call call) {
  std::optional<ClError> failure;
  std::vector<Replica> parts{{program->connection, program->id}};
  parts.insert(parts.end(), program->replicas.begin(), program->replicas.end());
  for (const Replica& part : parts) {
    std::vector<ObjectId> ids;
    for (cl_device_id device : devices)
      if (device->connection == part.connection) ids.push_back(device->id);
    if (!devices.empty() && ids.empty()) continue;
    try {
      call(part.connection, part.id, ids);
    } catch (const ClError& error) {
      if (!failure) failure = error;
    }
  }
  if (failure) throw *failure;
}

// The header of the program's HiveCL binaries (protocol/program_binary.hpp): its kernels whose
// arguments are known for certain; none where the kernels are not known.
std::optional<BinaryHeader> binary_header(_cl_program* program) {
  const auto parsed = program->parsed_kernels();
  if (!parsed || !parsed->certain) return std::nullopt;
  BinaryHeader header;
  for (const kernels_parser::Kernel& kernel : parsed->kernels) {
    if (!kernel.certain) continue;  // its arguments are asked of the device, as without a header
    BinaryKernel& entry = header.kernels.emplace_back(BinaryKernel{.name = kernel.name, .arguments = {}});
    for (const kernels_parser::Argument& argument : kernel.arguments)
      entry.arguments.push_back({.kind = static_cast<uint8_t>(argument.kind),
                                 .access = static_cast<uint8_t>(argument.access),
                                 .size = argument.size.value_or(0)});
  }
  return header;
}

// The kernels a HiveCL binary's header names; nothing if it names an argument kind not known here.
std::shared_ptr<const kernels_parser::Program> header_kernels(const BinaryHeader& header) {
  auto program = std::make_shared<kernels_parser::Program>();
  for (const BinaryKernel& entry : header.kernels) {
    kernels_parser::Kernel& kernel = program->kernels.emplace_back();
    kernel.name = entry.name;
    for (const BinaryArgument& argument : entry.arguments) {
      if (argument.kind > static_cast<uint8_t>(kernels_parser::ArgKind::by_value) ||
          argument.access > static_cast<uint8_t>(kernels_parser::Access::read_write))
        return nullptr;
      kernel.arguments.push_back({.kind = static_cast<kernels_parser::ArgKind>(argument.kind),
                                  .access = static_cast<kernels_parser::Access>(argument.access),
                                  .size = argument.size ? std::optional<uint64_t>(argument.size) : std::nullopt});
    }
  }
  return program;
}

// The program's binaries as the application gets them: the device's, behind a header where
// the kernels are known.
std::vector<Bytes> application_binaries(_cl_program* program) {
  // Each connection answers for its devices, in the program's order of them.
  std::vector<Bytes> binaries(program->devices.size());
  on_each_part(program, {}, [&](Connection* connection, ObjectId id, const std::vector<ObjectId>&) {
    auto part = connection->call<GetProgramBinaries>({.program = id}).binaries;
    size_t next = 0;
    for (size_t i = 0; i < program->devices.size() && next < part.size(); ++i)
      if (program->devices[i]->connection == connection) binaries[i] = std::move(part[next++]);
  });
  if (const auto header = binary_header(program))
    for (Bytes& binary : binaries)
      if (!binary.empty()) binary = wrap_binary(*header, binary);
  return binaries;
}

void get_binary_sizes(_cl_program* program, InfoReply& reply) {
  std::vector<size_t> sizes;
  for (const Bytes& binary : application_binaries(program)) sizes.push_back(binary.size());
  reply.list(sizes);
}

void get_binaries(_cl_program* program, size_t param_value_size, void* param_value, size_t* param_value_size_ret) {
  const size_t needed = program->devices.size() * sizeof(unsigned char*);
  if (param_value_size_ret) *param_value_size_ret = needed;
  if (!param_value) return;
  if (param_value_size < needed) throw ClError{CL_INVALID_VALUE};
  const auto binaries = application_binaries(program);
  auto** destinations = static_cast<unsigned char**>(param_value);
  for (size_t i = 0; i < program->devices.size() && i < binaries.size(); ++i)
    if (destinations[i] && !binaries[i].empty()) std::memcpy(destinations[i], binaries[i].data(), binaries[i].size());
}

// Kernel arguments are set without asking the proxy where the source tells their kinds (kernel.cpp);
// programs from binaries leave that to the proxy.
void remember_signatures(_cl_program* program, const char* options, kernels_parser::Headers headers = {}) {
  if (program->source.empty()) return;
  auto parsed = std::make_shared<const kernels_parser::Program>(
      kernels_parser::parse({program->source}, options, std::move(headers)));
  std::lock_guard lock(program->parsed_mutex);
  program->parsed = std::move(parsed);
}

// A linked program's kernels are those of its inputs, known where every input's source was
// understood. The proxy's fallback cannot always tell them: a device may keep no argument
// information in a link (NVIDIA), and PoCL 3.1 aborts making a binary of a kernel whose name
// is too long for a file name.
void remember_linked_signatures(_cl_program* linked, cl_uint num_inputs, const cl_program* inputs) {
  auto merged = std::make_shared<kernels_parser::Program>();
  for (cl_uint i = 0; i < num_inputs; ++i) {
    const auto parsed = inputs[i]->parsed_kernels();
    if (!parsed || !parsed->certain) return;
    merged->kernels.insert(merged->kernels.end(), parsed->kernels.begin(), parsed->kernels.end());
  }
  std::lock_guard lock(linked->parsed_mutex);
  linked->parsed = std::move(merged);
}

using BuildNotify = void(CL_CALLBACK*)(cl_program, void*);

// The application's notification of a build, compile or link: once, on HiveCL's callback
// thread, after the program has reached its status (the calls are synchronous).
void notify_built(_cl_program* program, BuildNotify pfn_notify, void* user_data) {
  if (!pfn_notify) return;
  auto hold = std::make_shared<Ref<_cl_program>>(program);
  TaskThread::callbacks().post([hold, pfn_notify, user_data] {
    pfn_notify(hold->get(), user_data);
    *hold = Ref<_cl_program>();  // the hold ends here, not in the application's thread
  });
}

void check_notify(BuildNotify pfn_notify, void* user_data) {
  if (!pfn_notify && user_data) throw ClError{CL_INVALID_VALUE};
}

// The devices of a new program: a non-empty list of the context's devices.
std::vector<cl_device_id> program_devices(const _cl_context* context, cl_uint num_devices,
                                          const cl_device_id* device_list) {
  if (num_devices == 0 || !device_list) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_device_id> devices;
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (!device_list[i] || !is_live(device_list[i], HandleKind::device) || !context->has_device(device_list[i]))
      throw ClError{CL_INVALID_DEVICE};
    devices.push_back(device_list[i]);
  }
  return devices;
}

// A program of `devices`, on the connection of the first (the context's own, unless it spans several).
std::unique_ptr<_cl_program> new_program(_cl_context* context, std::vector<cl_device_id> devices) {
  auto program = std::make_unique<_cl_program>();
  program->connection = devices.front()->connection;
  program->id = program->connection->new_id();
  program->context = Ref<_cl_context>(context);
  program->devices = std::move(devices);
  return program;
}

// Makes the program on each connection of its devices (one, unless its context spans several):
// `create(connection, id there, indices of the program's devices there)` sends the creation
// and throws if it fails. Should one fail, those made are released and the error is thrown.
template <class Create>
void make_on_each_part(std::unique_ptr<_cl_program>& program, Create create) {
  std::vector<Connection*> connections;
  for (cl_device_id device : program->devices)
    if (std::find(connections.begin(), connections.end(), device->connection) == connections.end())
      connections.push_back(device->connection);
  bool made = false;
  try {
    for (Connection* connection : connections) {
      const ObjectId id = connection == program->connection ? program->id : connection->new_id();
      std::vector<size_t> indices;
      for (size_t i = 0; i < program->devices.size(); ++i)
        if (program->devices[i]->connection == connection) indices.push_back(i);
      create(connection, id, indices);
      if (connection == program->connection) made = true;
      else program->replicas.push_back({connection, id});
    }
  } catch (...) {
    if (made) destroy(program.release());
    throw;
  }
}

cl_program create_with_binary(cl_context context, cl_uint num_devices, const cl_device_id* device_list,
                              const size_t* lengths, const unsigned char** binaries, cl_int* binary_status) {
  checked(context);
  auto devices = program_devices(context, num_devices, device_list);
  if (!lengths || !binaries) throw ClError{CL_INVALID_VALUE};
  std::vector<Bytes> copies;
  std::shared_ptr<const kernels_parser::Program> kernels;
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (lengths[i] == 0 || !binaries[i]) throw ClError{CL_INVALID_VALUE};
    const std::span binary(reinterpret_cast<const std::byte*>(binaries[i]), lengths[i]);
    const auto unwrapped = unwrap_binary(binary);
    const auto native = unwrapped ? unwrapped->native : binary;
    copies.emplace_back(native.begin(), native.end());
    if (unwrapped && !kernels) kernels = header_kernels(unwrapped->header);
  }
  auto program = new_program(context, std::move(devices));
  program->parsed = std::move(kernels);
  make_on_each_part(program, [&](Connection* connection, ObjectId id, const std::vector<size_t>& indices) {
    std::vector<ObjectId> ids;
    std::vector<Bytes> part_binaries;
    for (size_t i : indices) {
      ids.push_back(program->devices[i]->id);
      part_binaries.push_back(copies[i]);
    }
    const auto reply = connection->call<CreateProgramWithBinary>(
        {.id = id, .context = context->id_on(connection), .devices = ids, .binaries = part_binaries});
    for (size_t k = 0; binary_status && k < indices.size() && k < reply.binary_status.size(); ++k)
      binary_status[indices[k]] = reply.binary_status[k];
    check(reply.status);
  });
  return publish(program.release());
}

// The programs a compile or link names: `count` and `list` agree, each is live and of `context`.
void check_programs(const _cl_context* context, cl_uint count, const cl_program* list) {
  if ((count == 0) != (list == nullptr)) throw ClError{CL_INVALID_VALUE};
  for (cl_uint i = 0; i < count; ++i)
    if (checked(list[i])->context.get() != context) throw ClError{CL_INVALID_CONTEXT};
}

// Their ids on `connection` (checked by check_programs).
std::vector<ObjectId> program_ids_on(const Connection* connection, cl_uint count, const cl_program* list) {
  std::vector<ObjectId> ids;
  for (cl_uint i = 0; i < count; ++i) ids.push_back(list[i]->id_on(connection));
  return ids;
}

void compile_program(cl_program program, cl_uint num_devices, const cl_device_id* device_list, const char* options,
                     cl_uint num_input_headers, const cl_program* input_headers, const char** header_include_names,
                     BuildNotify pfn_notify, void* user_data) {
  checked(program);
  check_notify(pfn_notify, user_data);
  const auto devices = build_devices(program, num_devices, device_list);
  if ((num_input_headers == 0) != (header_include_names == nullptr)) throw ClError{CL_INVALID_VALUE};
  check_programs(program->context.get(), num_input_headers, input_headers);
  std::vector<std::string> names;
  kernels_parser::Headers header_sources;
  for (cl_uint i = 0; i < num_input_headers; ++i) {
    if (!header_include_names[i]) throw ClError{CL_INVALID_VALUE};
    names.emplace_back(header_include_names[i]);
    if (!input_headers[i]->source.empty()) header_sources.emplace(names.back(), input_headers[i]->source);
  }
  cl_int status = CL_SUCCESS;
  try {
    on_each_part(program, devices, [&](Connection* connection, ObjectId id, const std::vector<ObjectId>& ids) {
      connection->call<CompileProgram>({.program = id, .devices = ids, .options = options ? options : "",
                                        .headers = program_ids_on(connection, num_input_headers, input_headers),
                                        .header_names = names});
    });
  } catch (const ClError& error) {
    status = error.code;
  }
  if (status == CL_SUCCESS) remember_signatures(program, options ? options : "", std::move(header_sources));
  notify_built(program, pfn_notify, user_data);
  check(status);
}

// The linked program (or none) and the link's status: a failed link may still make one, for its log.
std::pair<cl_program, cl_int> link_program(cl_context context, cl_uint num_devices, const cl_device_id* device_list,
                                           const char* options, cl_uint num_input_programs,
                                           const cl_program* input_programs, BuildNotify pfn_notify,
                                           void* user_data) {
  checked(context);
  check_notify(pfn_notify, user_data);
  if ((num_devices == 0) != (device_list == nullptr)) throw ClError{CL_INVALID_VALUE};
  auto devices = num_devices ? program_devices(context, num_devices, device_list) : context->devices;
  if (num_input_programs == 0) throw ClError{CL_INVALID_VALUE};
  check_programs(context, num_input_programs, input_programs);
  auto program = new_program(context, std::move(devices));
  cl_int status = CL_SUCCESS;
  make_on_each_part(program, [&](Connection* connection, ObjectId id, const std::vector<size_t>& indices) {
    std::vector<ObjectId> ids;
    for (size_t i : indices) ids.push_back(program->devices[i]->id);
    const auto reply = connection->call<LinkProgram>(
        {.id = id, .context = context->id_on(connection), .devices = num_devices ? ids : std::vector<ObjectId>{},
         .options = options ? options : "", .inputs = program_ids_on(connection, num_input_programs, input_programs)});
    if (!reply.created) throw ClError{reply.status};
    if (status == CL_SUCCESS) status = reply.status;
  });
  if (status == CL_SUCCESS) remember_linked_signatures(program.get(), num_input_programs, input_programs);
  cl_program linked = publish(program.release());
  notify_built(linked, pfn_notify, user_data);
  return {linked, status};
}

}  // namespace

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count, const char** strings,
                                                              const size_t* lengths, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(context);
    if (count == 0 || !strings) throw ClError{CL_INVALID_VALUE};
    std::string source;
    for (cl_uint i = 0; i < count; ++i) {
      if (!strings[i]) throw ClError{CL_INVALID_VALUE};
      source.append(strings[i], lengths && lengths[i] ? lengths[i] : std::strlen(strings[i]));
    }
    auto program = new_program(context, context->devices);
    context->connection->call<CreateProgramWithSource>({.id = program->id, .context = context->id, .source = source});
    replicate(program.get(), context, [&](Connection* connection, ObjectId id, ObjectId context_there) {
      connection->call<CreateProgramWithSource>({.id = id, .context = context_there, .source = source});
    });
    program->source = std::move(source);
    return publish(program.release());
  });
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id* device_list,
                                               const char* options,
                                               void(CL_CALLBACK* pfn_notify)(cl_program, void*), void* user_data) {
  return guarded([&] {
    checked(program);
    check_notify(pfn_notify, user_data);
    const auto devices = build_devices(program, num_devices, device_list);
    cl_int status = CL_SUCCESS;
    try {
      on_each_part(program, devices, [&](Connection* connection, ObjectId id, const std::vector<ObjectId>& ids) {
        connection->call<BuildProgram>({.program = id, .devices = ids, .options = options ? options : ""});
      });
    } catch (const ClError& error) {
      status = error.code;
    }
    if (status == CL_SUCCESS) remember_signatures(program, options ? options : "");
    notify_built(program, pfn_notify, user_data);
    check(status);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainProgram(cl_program program) {
  return guarded([&] { retain(program); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
  return guarded([&] { release(program); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return guarded([&] {
    checked(program);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_PROGRAM_REFERENCE_COUNT: return reply.scalar(program->refs.load());
      case CL_PROGRAM_CONTEXT: return reply.scalar(static_cast<cl_context>(program->context.get()));
      case CL_PROGRAM_NUM_DEVICES: return reply.scalar(static_cast<cl_uint>(program->devices.size()));
      case CL_PROGRAM_DEVICES: return reply.list(program->devices);
      case CL_PROGRAM_SOURCE: return reply.string(program->source);
      case CL_PROGRAM_BINARY_SIZES: return get_binary_sizes(program, reply);
      case CL_PROGRAM_BINARIES: return get_binaries(program, param_value_size, param_value, param_value_size_ret);
      default: remote_info(program->connection, InfoFamily::program, program->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name, size_t param_value_size,
                                                      void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(program);
    checked(device);
    if (std::find(program->devices.begin(), program->devices.end(), device) == program->devices.end())
      throw ClError{CL_INVALID_DEVICE};
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    remote_info(device->connection, InfoFamily::program_build, program->id_on(device->connection), param_name, reply,
                device->id);
  });
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                                              const cl_device_id* device_list, const size_t* lengths,
                                                              const unsigned char** binaries, cl_int* binary_status,
                                                              cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    return create_with_binary(context, num_devices, device_list, lengths, binaries, binary_status);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clCompileProgram(cl_program program, cl_uint num_devices,
                                                 const cl_device_id* device_list, const char* options,
                                                 cl_uint num_input_headers, const cl_program* input_headers,
                                                 const char** header_include_names,
                                                 void(CL_CALLBACK* pfn_notify)(cl_program, void*), void* user_data) {
  return guarded([&] {
    compile_program(program, num_devices, device_list, options, num_input_headers, input_headers,
                    header_include_names, pfn_notify, user_data);
  });
}

CL_API_ENTRY cl_program CL_API_CALL clLinkProgram(cl_context context, cl_uint num_devices,
                                                  const cl_device_id* device_list, const char* options,
                                                  cl_uint num_input_programs, const cl_program* input_programs,
                                                  void(CL_CALLBACK* pfn_notify)(cl_program, void*), void* user_data,
                                                  cl_int* errcode_ret) {
  std::pair<cl_program, cl_int> linked{nullptr, CL_SUCCESS};
  const cl_int status = guarded([&] {
    linked = link_program(context, num_devices, device_list, options, num_input_programs, input_programs, pfn_notify,
                          user_data);
  });
  if (errcode_ret) *errcode_ret = status != CL_SUCCESS ? status : linked.second;
  return linked.first;
}

// No device reports built-in kernels (CL_DEVICE_BUILT_IN_KERNELS is empty): every name is unknown.
CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
                                                                      const cl_device_id* device_list,
                                                                      const char* /*kernel_names: none is known*/,
                                                                      cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    program_devices(context, num_devices, device_list);
    throw ClError{CL_INVALID_VALUE};
  });
}

// No device reports an intermediate language (CL_DEVICE_IL_VERSION is empty).
CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithIL(cl_context context, const void*, size_t,
                                                          cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetProgramReleaseCallback(cl_program program, void(CL_CALLBACK*)(cl_program, void*),
                                                            void*) {
  return guarded([&] {
    checked(program);
    throw ClError{CL_INVALID_OPERATION};  // deprecated in 3.0 for devices without program-scope destructors
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetProgramSpecializationConstant(cl_program program, cl_uint, size_t, const void*) {
  return guarded([&] {
    checked(program);
    throw ClError{CL_INVALID_OPERATION};  // only IL programs have specialization constants
  });
}
