// Program family on the proxy side.
#include <CL/cl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "log.hpp"
#include "proxy/build_warnings.hpp"
#include "proxy/executors.hpp"
#include "proxy/output_capture.hpp"

namespace hivecl::proxy {

using namespace protocol;

CreateProgramWithSource::Reply execute(Call& call, const CreateProgramWithSource::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const char* source = request.source.c_str();
  const size_t length = request.source.size();
  cl_int status = CL_SUCCESS;
  const cl_program program = clCreateProgramWithSource(context, 1, &source, &length, &status);
  check(status);
  session.add(request.id, ObjectKind::program, program);
  session.note_program(may_print(std::as_bytes(std::span(request.source))));
  return {};
}

namespace {

// The first of `program`'s devices, or null.
cl_device_id first_device(cl_program program) {
  const Bytes devices = query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramInfo(program, CL_PROGRAM_DEVICES, n, v, r);
  });
  cl_device_id device = nullptr;
  if (devices.size() >= sizeof device) std::memcpy(&device, devices.data(), sizeof device);
  return device;
}

// A macro of a name reserved to the implementation, of a value no build had before: NVIDIA's
// compiler cache answers a build it has seen with an empty log, where -Werror needs the warnings.
std::string uncached_build_option() {
  static const uint64_t process_value = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  static std::atomic<uint64_t> builds{0};
  return " -D__HIVECL_UNCACHED_BUILD=" + std::to_string(process_value) + "_" + std::to_string(builds++);
}

// An option NVIDIA's compiler does not know: a build with it fails and leaves no executable.
constexpr const char* rejected_option = "-hivecl-failed-by-Werror";

// A build or compile of `program` with the application's options, or where its platform keeps
// warning switches (build_warnings.hpp) without them, doing what they ask.
class SwitchedBuild {
 public:
  SwitchedBuild(cl_program program, const std::string& options) : program_(program), options_(options) {
    switches_ = warning_switches(options);
    if (!switches_) return;
    device_ = first_device(program);  // a program's devices are of one platform
    if (!device_ || !keeps_warning_switches(device_)) switches_.reset();
  }

  // Runs `native(options)`, clBuildProgram or clCompileProgram with its other arguments bound,
  // and returns its status as the application's switches make it (`failure` where -Werror fails it).
  template <class Native>
  cl_int run(Session& session, Native&& native, cl_int failure) {
    if (!switches_) {
      const cl_int status = native(options_.c_str());
      if (ran(status)) session.note_build(program_, std::nullopt);
      return status;
    }
    const bool as_errors = switches_->as_errors && !switches_->hidden;
    const std::string options = switches_->other_options + (as_errors ? uncached_build_option() : "");
    cl_int status = native(options.c_str());
    Session::SwitchlessBuild build{.options = options_, .warnings_hidden = switches_->hidden, .failed_log = {}};
    if (as_errors && status == CL_SUCCESS) {
      const std::string log = text_info(query_info([&](size_t n, void* v, size_t* r) {
        return clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, n, v, r);
      }));
      if (has_warnings(log)) {
        build.failed_log = warnings_as_errors(log);
        if (native(rejected_option) == CL_SUCCESS) log::warn("a build with ", rejected_option, " succeeded");
        status = failure;
      }
    }
    if (ran(status)) session.note_build(program_, std::move(build));
    return status;
  }

 private:
  // A build that ran, and made a log (one refused before it leaves the program as it was).
  static bool ran(cl_int status) {
    return status == CL_SUCCESS || status == CL_BUILD_PROGRAM_FAILURE || status == CL_COMPILE_PROGRAM_FAILURE;
  }

  cl_program program_;
  const std::string& options_;
  std::optional<WarningSwitches> switches_;
  cl_device_id device_ = nullptr;  // whose log tells whether the build warned
};

}  // namespace

BuildProgram::Reply execute(Call& call, const BuildProgram::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const auto devices = call.session.devices(request.devices);
  const auto build = [&](const char* options) {
    return clBuildProgram(program, static_cast<cl_uint>(devices.size()), devices.empty() ? nullptr : devices.data(),
                          options, nullptr, nullptr);
  };
  check(SwitchedBuild(program, request.options).run(call.session, build, CL_BUILD_PROGRAM_FAILURE));
  return {};
}

GetProgramBinaries::Reply execute(Call& call, const GetProgramBinaries::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const Bytes sizes_value = query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, n, v, r);
  });
  std::vector<size_t> sizes(sizes_value.size() / sizeof(size_t));
  std::memcpy(sizes.data(), sizes_value.data(), sizes.size() * sizeof(size_t));
  GetProgramBinaries::Reply reply;
  std::vector<unsigned char*> pointers;
  for (size_t size : sizes) {
    reply.binaries.emplace_back(size);
    pointers.push_back(reinterpret_cast<unsigned char*>(reply.binaries.back().data()));
  }
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, pointers.size() * sizeof(unsigned char*), pointers.data(),
                         nullptr));
  return reply;
}

CreateProgramWithBinary::Reply execute(Call& call, const CreateProgramWithBinary::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const auto devices = session.devices(request.devices);
  if (devices.empty() || request.binaries.size() != devices.size()) throw ClError{CL_INVALID_VALUE};
  std::vector<size_t> lengths;
  std::vector<const unsigned char*> binaries;
  for (const Bytes& binary : request.binaries) {
    if (binary.empty()) throw ClError{CL_INVALID_VALUE};
    lengths.push_back(binary.size());
    binaries.push_back(reinterpret_cast<const unsigned char*>(binary.data()));
  }
  std::vector<cl_int> binary_status(devices.size(), CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  const cl_program program =
      clCreateProgramWithBinary(context, static_cast<cl_uint>(devices.size()), devices.data(), lengths.data(),
                                binaries.data(), binary_status.data(), &status);
  CreateProgramWithBinary::Reply reply{.status = status, .binary_status = binary_status};
  if (status != CL_SUCCESS) return reply;
  session.add(request.id, ObjectKind::program, program);
  session.note_program(std::ranges::any_of(request.binaries, [](const Bytes& binary) { return may_print(binary); }));
  return reply;
}

namespace {

std::vector<cl_program> programs(Session& session, const std::vector<ObjectId>& ids) {
  std::vector<cl_program> natives;
  for (ObjectId id : ids) natives.push_back(session.get<cl_program>(id));
  return natives;
}

template <class T>
const T* data_or_null(const std::vector<T>& values) {
  return values.empty() ? nullptr : values.data();
}

// The spec's rule for a link's inputs, checked before the runtime sees them (NVIDIA's
// clLinkProgram crashes the proxy when one is an executable): for each device, every input
// holds a compiled object or a library for it, or none does. Inputs the runtime will refuse
// for another reason (a device or context not theirs) are left to it, for its error code.
void check_link_inputs(const std::vector<cl_program>& inputs, const std::vector<cl_device_id>& devices) {
  for (cl_device_id device : devices) {
    size_t linkable = 0;
    for (cl_program input : inputs) {
      cl_program_binary_type type = CL_PROGRAM_BINARY_TYPE_NONE;
      if (clGetProgramBuildInfo(input, device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, nullptr) != CL_SUCCESS)
        return;
      if (type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT || type == CL_PROGRAM_BINARY_TYPE_LIBRARY) {
        ++linkable;
      } else if (type != CL_PROGRAM_BINARY_TYPE_NONE) {
        throw ClError{CL_INVALID_OPERATION};
      }
    }
    if (linkable != 0 && linkable != inputs.size()) throw ClError{CL_INVALID_OPERATION};
  }
}

}  // namespace

CompileProgram::Reply execute(Call& call, const CompileProgram::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const auto devices = call.session.devices(request.devices);
  const auto headers = programs(call.session, request.headers);
  if (headers.size() != request.header_names.size()) throw ClError{CL_INVALID_VALUE};
  std::vector<const char*> names;
  for (const std::string& name : request.header_names) names.push_back(name.c_str());
  const auto compile = [&](const char* options) {
    return clCompileProgram(program, static_cast<cl_uint>(devices.size()), data_or_null(devices), options,
                            static_cast<cl_uint>(headers.size()), data_or_null(headers),
                            names.empty() ? nullptr : names.data(), nullptr, nullptr);
  };
  check(SwitchedBuild(program, request.options).run(call.session, compile, CL_COMPILE_PROGRAM_FAILURE));
  return {};
}

LinkProgram::Reply execute(Call& call, const LinkProgram::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const auto devices = session.devices(request.devices);
  const auto inputs = programs(session, request.inputs);
  if (inputs.empty()) throw ClError{CL_INVALID_VALUE};
  check_link_inputs(inputs, devices.empty() ? context_devices(context) : devices);
  cl_int status = CL_SUCCESS;
  const cl_program program =
      clLinkProgram(context, static_cast<cl_uint>(devices.size()), data_or_null(devices), request.options.c_str(),
                    static_cast<cl_uint>(inputs.size()), inputs.data(), nullptr, nullptr, &status);
  if (program) session.add(request.id, ObjectKind::program, program);
  return {.created = program != nullptr, .status = status};
}

}  // namespace hivecl::proxy
