// Writes the seed corpora of the fuzz targets, encoded from the message table:
//   fuzz-corpus DECODERS_DIR SESSION_DIR KERNELS_PARSER_DIR
// DECODERS_DIR gets a sample of every type of decodable_types(); SESSION_DIR gets a
// whole valid session (context, queue, buffers, transfers, a program, a kernel run,
// queries, events, releases) and every message alone with sample field values;
// KERNELS_PARSER_DIR the kernels-parser's test corpus (options, a newline, the source).
#include <CL/cl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "corpus.hpp"
#include "fuzz_inputs.hpp"
#include "protocol_samples.hpp"

namespace {

using namespace hivecl;
using namespace hivecl::protocol;
using fuzz::append_frame;

void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// It touches no memory. The fuzzer changes buffer sizes and work sizes freely, and a kernel on a
// CPU device runs in the proxy's own memory, where nothing can bound it: an `add` that wrote
// c[get_global_id(0)] corrupted the fuzzer's heap (as a native program's kernel can corrupt
// that program). What is fuzzed is the proxy's handling of the messages around the launch.
constexpr const char* kernel_source =
    "__kernel void add(__global const float* a, __global const float* b, __global float* c) {}\n";

Bytes whole_session() {
  constexpr ObjectId device = 1, context = first_session_id, queue = context + 1, a = context + 2, b = context + 3,
                     c = context + 4, program = context + 5, kernel = context + 6, written = context + 7,
                     done = context + 8, sub_device = context + 9, svm = context + 11, over_svm = context + 12;
  constexpr uint64_t bytes = 1024 * sizeof(float);
  Bytes input;
  uint64_t sequence = 1;
  append_frame<CreateContext>(input, sequence++, {.id = context, .devices = {device}});
  append_frame<CreateCommandQueue>(input, sequence++,
                                   {.id = queue, .context = context, .device = device,
                                    .properties = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0}});
  append_frame<CreateBuffer>(input, sequence++,
                             {.id = a, .context = context, .flags = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              .size = bytes, .with_data = true});
  append_frame<CreateBuffer>(input, sequence++, {.id = b, .context = context, .flags = CL_MEM_READ_ONLY, .size = bytes});
  append_frame<CreateBuffer>(input, sequence++, {.id = c, .context = context, .flags = CL_MEM_READ_WRITE, .size = bytes});
  append_frame<WriteBuffer>(input, sequence++, {.queue = queue, .mem = b, .size = bytes, .tail = {.event = written}});
  append_frame<FillBuffer>(input, sequence++,
                           {.queue = queue, .mem = c, .pattern = Bytes(4, std::byte{1}), .size = bytes});
  append_frame<CreateProgramWithSource>(input, sequence++, {.id = program, .context = context, .source = kernel_source});
  append_frame<BuildProgram>(input, sequence++, {.program = program, .options = "-cl-fast-relaxed-math"});
  append_frame<GetInfo>(input, sequence++,
                        {.family = InfoFamily::program_build, .object = program, .device = device,
                         .param = CL_PROGRAM_BUILD_LOG});
  append_frame<CreateKernel>(input, sequence++, {.id = kernel, .program = program, .name = "add"});
  // The arguments travel with the launch (clSetKernelArg sends nothing).
  std::vector<KernelArg> args;
  for (const ObjectId mem : {a, b, c})
    args.push_back({.index = static_cast<uint32_t>(args.size()), .kind = ArgKind::mem_object, .size = sizeof(cl_mem),
                    .object = mem});
  append_frame<GetInfo>(input, sequence++,
                        {.family = InfoFamily::kernel_work_group, .object = kernel, .device = device,
                         .param = CL_KERNEL_WORK_GROUP_SIZE});
  append_frame<GetInfo>(input, sequence++,
                        {.family = InfoFamily::kernel_sub_group, .object = kernel, .device = device,
                         .param = CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                         .input = Bytes{std::byte{64}, {}, {}, {}, {}, {}, {}, {}}});  // one local size: 64
  append_frame<EnqueueNDRangeKernel>(input, sequence++,
                                     {.queue = queue, .kernel = kernel, .args = args, .work_dim = 1,
                                      .global_size = {1024},
                                      .local_size = {64}, .tail = {.wait_list = {written}, .event = done}});
  append_frame<CopyBuffer>(input, sequence++, {.queue = queue, .source = c, .destination = a, .size = bytes});
  append_frame<EnqueueMarker>(input, sequence++, {.queue = queue, .barrier = true});
  append_frame<ReadBuffer>(input, sequence++, {.queue = queue, .mem = c, .size = bytes, .tail = {.wait_list = {done}}});
  // Reads the client did not wait for: one into memory the proxy does not map (a segment it
  // cannot have on this path), whose failure reaches its event, and one it moves itself.
  append_frame<ReadBuffer>(input, sequence++,
                           {.queue = queue, .mem = c, .size = bytes,
                            .shared = {.segment = 1, .fd = 3, .inode = 1, .segment_size = bytes}, .detached = true});
  append_frame<ReadBuffer>(input, sequence++, {.queue = queue, .mem = c, .size = bytes, .detached = true});
  append_frame<WaitForEvents>(input, sequence++, {.events = {done}});
  append_frame<GetInfo>(input, sequence++,
                        {.family = InfoFamily::event_profiling, .object = done, .param = CL_PROFILING_COMMAND_END});
  append_frame<GetInfo>(input, sequence++,
                        {.family = InfoFamily::event_timestamps, .object = done, .param = CL_PROFILING_COMMAND_START});
  append_frame<GetProgramBinaries>(input, sequence++, {.program = program});
  // Sub-devices: as many ids as a partition in halves makes on a device of two units.
  append_frame<CreateSubDevices>(input, sequence++,
                                 {.device = device, .properties = {CL_DEVICE_PARTITION_EQUALLY, 1, 0},
                                  .ids = {sub_device, sub_device + 1}});
  // Shared virtual memory: an allocation, a buffer over part of it, a launch given addresses in it.
  append_frame<SvmAlloc>(input, sequence++, {.id = svm, .context = context, .flags = CL_MEM_READ_WRITE, .size = bytes});
  append_frame<CreateBuffer>(input, sequence++, {.id = over_svm, .context = context, .flags = CL_MEM_USE_HOST_PTR,
                                                 .size = bytes / 2, .svm = {.allocation = svm, .offset = bytes / 4}});
  append_frame<SetKernelExecInfo>(input, sequence++, {.kernel = kernel, .pointers = {{.allocation = svm}}});
  args[0] = {.index = 0, .kind = ArgKind::svm_pointer, .size = sizeof(void*), .object = svm, .offset = 16};
  args[2].object = over_svm;
  append_frame<EnqueueNDRangeKernel>(input, sequence++,
                                     {.queue = queue, .kernel = kernel, .args = args, .work_dim = 1,
                                      .global_size = {1024}});
  append_frame<Release>(input, sequence++, {.kind = ObjectKind::mem, .id = over_svm});
  append_frame<Release>(input, sequence++, {.kind = ObjectKind::mem, .id = svm});
  append_frame<Flush>(input, sequence++, {.queue = queue});
  append_frame<Finish>(input, sequence++, {.queue = queue});
  for (auto [kind, id] : {std::pair{ObjectKind::event, done}, {ObjectKind::kernel, kernel},
                          {ObjectKind::program, program}, {ObjectKind::mem, a}, {ObjectKind::device, sub_device}})
    append_frame<Release>(input, sequence++, {.kind = kind, .id = id});
  append_frame<Goodbye>(input, sequence++, {});
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fuzz-corpus DECODERS_DIR SESSION_DIR KERNELS_PARSER_DIR\n");
    return 2;
  }
  const std::filesystem::path decoders = argv[1], session = argv[2], kernels = argv[3];
  for (const auto& directory : {decoders, session, kernels}) std::filesystem::create_directories(directory);
  const auto& types = fuzz::decodable_types();
  for (size_t i = 0; i < types.size(); ++i) {
    Bytes input{static_cast<std::byte>(i)};
    const Bytes sample = types[i].sample();
    input.insert(input.end(), sample.begin(), sample.end());
    write_file(decoders / types[i].name, input);
  }
  write_file(session / "whole-session", whole_session());
  for (const kernels_parser::corpus::Source& source : kernels_parser::corpus::sources())
    std::ofstream(kernels / source.name) << source.options << '\n' << source.text;
  for_each_message([&]<class M>() {
    typename M::Request request{};
    samples::fill(request, 1);
    Bytes input;
    append_frame<M>(input, 1, request);
    write_file(session / M::message_name, input);
  });
  return 0;
}
