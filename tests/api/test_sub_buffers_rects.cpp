// Sub-buffers and rectangular transfers, natively and through HiveCL: data, queries,
// lifetime, use in kernels, and the specification's errors for bad input.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

using Bytes = std::vector<unsigned char>;

Bytes pattern(size_t size, unsigned seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 37 + (i >> 8) + seed * 11 + 1);
  return bytes;
}

Buffer buffer_with(cl_context context, cl_mem_flags flags, Bytes& contents) {
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(context, flags | CL_MEM_COPY_HOST_PTR, contents.size(), contents.data(), &status));
  REQUIRE(status == CL_SUCCESS);
  return buffer;
}

Bytes read_all(cl_command_queue queue, cl_mem buffer, size_t size) {
  Bytes bytes(size);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, bytes.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  return bytes;
}

void record_bytes(Probe& probe, const std::string& what, const Bytes& bytes, const Bytes& expected) {
  probe.record(what, checksum(bytes.data(), bytes.size()));
  const bool intact = bytes == expected;
  CHECK(intact);
}

// The device's sub-buffer alignment in bytes.
size_t base_alignment(cl_device_id device) {
  cl_uint bits = 0;
  REQUIRE(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, nullptr) == CL_SUCCESS);
  return bits / 8;
}

Buffer sub_buffer(Probe& probe, const std::string& what, cl_mem parent, cl_mem_flags flags, size_t origin,
                  size_t size) {
  const cl_buffer_region region{origin, size};
  cl_int status = CL_SUCCESS;
  Buffer sub(clCreateSubBuffer(parent, flags, CL_BUFFER_CREATE_TYPE_REGION, &region, &status));
  probe.status(what, status);
  CHECK((sub.get() != nullptr) == (status == CL_SUCCESS));
  return sub;
}

constexpr const char* increment_source = R"(
kernel void increment(global uchar* data) { data[get_global_id(0)] += 1; }
)";

// A box of bytes in memory with pitches (0 means packed, as the API says).
struct Box {
  std::array<size_t, 3> origin;
  size_t row_pitch;
  size_t slice_pitch;
};

// What a rectangular copy from `from` to `to` does, computed on the host.
void copy_box(const Bytes& source, const Box& from, Bytes& destination, const Box& to,
              const std::array<size_t, 3>& region) {
  const auto row = [&](const Box& box) { return box.row_pitch ? box.row_pitch : region[0]; };
  const auto slice = [&](const Box& box) { return box.slice_pitch ? box.slice_pitch : region[1] * row(box); };
  for (size_t z = 0; z < region[2]; ++z)
    for (size_t y = 0; y < region[1]; ++y)
      for (size_t x = 0; x < region[0]; ++x)
        destination[(to.origin[2] + z) * slice(to) + (to.origin[1] + y) * row(to) + to.origin[0] + x] =
            source[(from.origin[2] + z) * slice(from) + (from.origin[1] + y) * row(from) + from.origin[0] + x];
}

cl_int read_rect(cl_command_queue queue, cl_mem buffer, cl_bool blocking, const Box& device,
                 const std::array<size_t, 3>& region, const Box& host, void* ptr, cl_event* event = nullptr) {
  return clEnqueueReadBufferRect(queue, buffer, blocking, device.origin.data(), host.origin.data(), region.data(),
                                 device.row_pitch, device.slice_pitch, host.row_pitch, host.slice_pitch, ptr, 0,
                                 nullptr, event);
}

cl_int write_rect(cl_command_queue queue, cl_mem buffer, const Box& device, const std::array<size_t, 3>& region,
                  const Box& host, const void* ptr) {
  return clEnqueueWriteBufferRect(queue, buffer, CL_TRUE, device.origin.data(), host.origin.data(), region.data(),
                                  device.row_pitch, device.slice_pitch, host.row_pitch, host.slice_pitch, ptr, 0,
                                  nullptr, nullptr);
}

cl_int copy_rect(cl_command_queue queue, cl_mem source, cl_mem destination, const Box& from, const Box& to,
                 const std::array<size_t, 3>& region) {
  return clEnqueueCopyBufferRect(queue, source, destination, from.origin.data(), to.origin.data(), region.data(),
                                 from.row_pitch, from.slice_pitch, to.row_pitch, to.slice_pitch, 0, nullptr, nullptr);
}

}  // namespace

// --- sub-buffers --------------------------------------------------------------------

DIFFERENTIAL_TEST(sub_buffer_data, "sub-buffers read, write and run kernels on their region of the parent",
                  "[memory][sub-buffer]") {
  auto setup = make_setup(probe);
  const size_t align = base_alignment(probe.device());
  const size_t size = 8 * align;
  Bytes contents = pattern(size, 1);
  Buffer parent = buffer_with(setup.context, CL_MEM_READ_WRITE, contents);
  Buffer sub = sub_buffer(probe, "create", parent, 0, 2 * align, 3 * align);
  REQUIRE(sub.get());

  Bytes expected(contents.begin() + 2 * align, contents.begin() + 5 * align);
  record_bytes(probe, "sub-buffer read", read_all(setup.queue, sub, 3 * align), expected);

  Bytes fresh = pattern(align, 2);
  probe.status("write into the sub-buffer",
               clEnqueueWriteBuffer(setup.queue, sub, CL_TRUE, align, align, fresh.data(), 0, nullptr, nullptr));
  std::copy(fresh.begin(), fresh.end(), contents.begin() + 3 * align);
  record_bytes(probe, "parent after the write", read_all(setup.queue, parent, size), contents);

  Program program = build_program(probe, setup.context, increment_source);
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, "increment", &status));
  REQUIRE(status == CL_SUCCESS);
  cl_mem argument = sub;
  probe.status("sub-buffer as a kernel argument", clSetKernelArg(kernel, 0, sizeof argument, &argument));
  const size_t global = 3 * align;
  probe.status("launch", clEnqueueNDRangeKernel(setup.queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  for (size_t i = 2 * align; i < 5 * align; ++i) contents[i] = static_cast<unsigned char>(contents[i] + 1);
  record_bytes(probe, "parent after the kernel", read_all(setup.queue, parent, size), contents);

  Buffer copy_target = sub_buffer(probe, "second sub-buffer", parent, 0, 6 * align, align);
  probe.status("copy between sub-buffers of one parent",
               clEnqueueCopyBuffer(setup.queue, sub, copy_target, 0, 0, align, 0, nullptr, nullptr));
  std::copy(contents.begin() + 2 * align, contents.begin() + 3 * align, contents.begin() + 6 * align);
  record_bytes(probe, "parent after the copy", read_all(setup.queue, parent, size), contents);
}

DIFFERENTIAL_TEST(sub_buffer_queries, "sub-buffers answer their parent, offset, size and reference counts",
                  "[memory][sub-buffer]") {
  auto setup = make_setup(probe);
  const size_t align = base_alignment(probe.device());
  Bytes contents = pattern(4 * align, 3);
  Buffer parent = buffer_with(setup.context, CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY, contents);
  Buffer sub = sub_buffer(probe, "create", parent, 0, align, 2 * align);
  REQUIRE(sub.get());
  cl_mem associated = nullptr;
  REQUIRE(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, nullptr) == CL_SUCCESS);
  CHECK(associated == parent.get());
  probe.value("names its parent", associated == parent.get());
  size_t offset = 0, size = 0;
  REQUIRE(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof offset, &offset, nullptr) == CL_SUCCESS);
  REQUIRE(clGetMemObjectInfo(sub, CL_MEM_SIZE, sizeof size, &size, nullptr) == CL_SUCCESS);
  probe.value("offset in alignments", offset / align);
  probe.value("size in alignments", size / align);
  REQUIRE(clGetMemObjectInfo(parent, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, nullptr) ==
          CL_SUCCESS);
  probe.value("a buffer has no parent", associated == nullptr);
  cl_mem_flags flags = 0;
  REQUIRE(clGetMemObjectInfo(sub, CL_MEM_FLAGS, sizeof flags, &flags, nullptr) == CL_SUCCESS);
  probe.value("inherits read-only access", (flags & CL_MEM_READ_ONLY) != 0);
  probe.value("inherits host read-only access", (flags & CL_MEM_HOST_READ_ONLY) != 0);
  cl_uint parent_refs = 0;
  REQUIRE(clGetMemObjectInfo(parent, CL_MEM_REFERENCE_COUNT, sizeof parent_refs, &parent_refs, nullptr) == CL_SUCCESS);
  probe.value("the parent's reference count with a sub-buffer", parent_refs);
  Bytes in_sub(2 * align);
  probe.status("host write refused (inherited host read-only)",
               clEnqueueWriteBuffer(setup.queue, sub, CL_TRUE, 0, align, in_sub.data(), 0, nullptr, nullptr));
}

namespace {

struct Destroyed {
  int parent = 0;
  int sub = 0;
};

void CL_CALLBACK parent_destroyed(cl_mem, void* data) { ++static_cast<Destroyed*>(data)->parent; }
void CL_CALLBACK sub_destroyed(cl_mem, void* data) { ++static_cast<Destroyed*>(data)->sub; }

}  // namespace

DIFFERENTIAL_TEST(sub_buffer_lifetime, "a sub-buffer keeps its parent alive", "[memory][sub-buffer]") {
  auto setup = make_setup(probe);
  const size_t align = base_alignment(probe.device());
  Bytes contents = pattern(4 * align, 4);
  cl_int status = CL_SUCCESS;
  cl_mem parent = clCreateBuffer(setup.context, CL_MEM_COPY_HOST_PTR, contents.size(), contents.data(), &status);
  REQUIRE(status == CL_SUCCESS);
  const cl_buffer_region region{align, align};
  cl_mem sub = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
  REQUIRE(status == CL_SUCCESS);
  Destroyed destroyed;
  REQUIRE(clSetMemObjectDestructorCallback(parent, parent_destroyed, &destroyed) == CL_SUCCESS);
  REQUIRE(clSetMemObjectDestructorCallback(sub, sub_destroyed, &destroyed) == CL_SUCCESS);
  probe.status("release the parent first", clReleaseMemObject(parent));
  probe.value("parent destroyed while its sub-buffer lives", destroyed.parent);
  Bytes expected(contents.begin() + align, contents.begin() + 2 * align);
  record_bytes(probe, "the sub-buffer still reads", read_all(setup.queue, sub, align), expected);
  probe.status("release the sub-buffer", clReleaseMemObject(sub));
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
  // Native runtimes may run destructor callbacks from their own threads: give them a moment.
  for (int i = 0; i < 200 && (destroyed.sub == 0 || destroyed.parent == 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  probe.value("sub-buffer destroyed", destroyed.sub);
  probe.value("parent destroyed after its sub-buffer", destroyed.parent);
}

DIFFERENTIAL_TEST(sub_buffer_errors, "sub-buffers refuse bad regions, flags and nesting", "[memory][sub-buffer]") {
  auto setup = make_setup(probe);
  const size_t align = base_alignment(probe.device());
  const size_t size = 4 * align;
  Bytes contents = pattern(size, 5);
  Buffer parent = buffer_with(setup.context, CL_MEM_READ_ONLY, contents);
  sub_buffer(probe, "misaligned origin", parent, 0, align + 1, align);
  sub_buffer(probe, "region past the end", parent, 0, 3 * align, 2 * align);
  sub_buffer(probe, "origin past the end", parent, 0, 5 * align, 1);
  sub_buffer(probe, "empty region", parent, 0, align, 0);
  sub_buffer(probe, "read-write from a read-only parent", parent, CL_MEM_READ_WRITE, 0, align);
  sub_buffer(probe, "write-only from a read-only parent", parent, CL_MEM_WRITE_ONLY, 0, align);
  sub_buffer(probe, "host pointer flag", parent, CL_MEM_USE_HOST_PTR, 0, align);
  sub_buffer(probe, "two access flags", parent, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 0, align);
  Buffer hidden = buffer_with(setup.context, CL_MEM_HOST_NO_ACCESS, contents);
  sub_buffer(probe, "host read from a host-no-access parent", hidden, CL_MEM_HOST_READ_ONLY, 0, align);
  const cl_buffer_region region{0, align};
  cl_int status = CL_SUCCESS;
  cl_mem none = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION + 1, &region, &status);
  probe.status("unknown create type", status);
  CHECK(none == nullptr);
  none = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, nullptr, &status);
  probe.status("no region", status);
  CHECK(none == nullptr);
  none = clCreateSubBuffer(nullptr, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
  probe.status("no parent", status);
  CHECK(none == nullptr);
  Buffer sub = sub_buffer(probe, "valid", parent, 0, align, 2 * align);
  REQUIRE(sub.get());
  sub_buffer(probe, "sub-buffer of a sub-buffer", sub, 0, 0, align);
}

// --- rectangular transfers ------------------------------------------------------------

DIFFERENTIAL_TEST(rect_read, "clEnqueueReadBufferRect applies both sides' pitches", "[memory][rect]") {
  auto setup = make_setup(probe);
  Bytes contents = pattern(16 * 8 * 4, 6);
  Buffer buffer = buffer_with(setup.context, 0, contents);
  const std::array<size_t, 3> region{5, 3, 2};
  const Box device{{2, 1, 1}, 16, 128};
  const Box host{{1, 2, 0}, 8, 40};
  Bytes expected(120, 0xAA);
  copy_box(contents, device, expected, host, region);

  Bytes got(120, 0xAA);
  probe.status("blocking read", read_rect(setup.queue, buffer, CL_TRUE, device, region, host, got.data()));
  record_bytes(probe, "blocking read data", got, expected);

  Bytes waited(120, 0xAA);
  Event event;
  probe.status("non-blocking read", read_rect(setup.queue, buffer, CL_FALSE, device, region, host, waited.data(),
                                              event.out()));
  probe.status("wait", clWaitForEvents(1, event.out()));
  record_bytes(probe, "waited read data", waited, expected);

  // Seen complete by polling its status alone, the read's data is in place.
  Bytes polled(120, 0xAA);
  Event polled_event;
  probe.status("polled read", read_rect(setup.queue, buffer, CL_FALSE, device, region, host, polled.data(),
                                        polled_event.out()));
  cl_int execution = CL_QUEUED;
  for (int i = 0; i < 2000 && execution != CL_COMPLETE; ++i) {
    REQUIRE(clGetEventInfo(polled_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr) ==
            CL_SUCCESS);
    if (execution != CL_COMPLETE) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  probe.status("polled status", execution);
  record_bytes(probe, "polled read data", polled, expected);
  cl_command_type type = 0;
  REQUIRE(clGetEventInfo(polled_event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS);
  probe.value("command type", type);

  // Pitches of 0: packed on both sides.
  const Box packed_device{{0, 0, 0}, 0, 0};
  const Box packed_host{{0, 0, 0}, 0, 0};
  const std::array<size_t, 3> whole{16, 8, 4};
  Bytes all(contents.size());
  probe.status("packed read", read_rect(setup.queue, buffer, CL_TRUE, packed_device, whole, packed_host, all.data()));
  record_bytes(probe, "packed read data", all, contents);
}

DIFFERENTIAL_TEST(rect_write_copy, "clEnqueueWriteBufferRect and clEnqueueCopyBufferRect place boxes",
                  "[memory][rect]") {
  auto setup = make_setup(probe);
  Bytes contents = pattern(32 * 4 * 3, 7);
  Buffer buffer = buffer_with(setup.context, 0, contents);
  Bytes source = pattern(12 * 5 * 2, 8);
  const std::array<size_t, 3> region{7, 4, 2};
  const Box device{{3, 0, 1}, 32, 128};
  const Box host{{2, 1, 0}, 12, 60};
  probe.status("write", write_rect(setup.queue, buffer, device, region, host, source.data()));
  copy_box(source, host, contents, device, region);
  record_bytes(probe, "after the write", read_all(setup.queue, buffer, contents.size()), contents);

  Bytes other_contents = pattern(20 * 6 * 2, 9);
  Buffer other = buffer_with(setup.context, 0, other_contents);
  const Box from{{1, 1, 0}, 32, 128};
  const Box to{{4, 2, 0}, 20, 120};
  probe.status("copy", copy_rect(setup.queue, buffer, other, from, to, region));
  copy_box(contents, from, other_contents, to, region);
  record_bytes(probe, "after the copy", read_all(setup.queue, other, other_contents.size()), other_contents);
}

DIFFERENTIAL_TEST(rect_large, "rectangular transfers of several megabytes", "[memory][rect]") {
  auto setup = make_setup(probe);
  const size_t width = 2048, height = 1200, depth = 3;
  Bytes contents = pattern(width * height * depth, 10);
  Buffer buffer = buffer_with(setup.context, 0, contents);
  const std::array<size_t, 3> region{1500, 1100, 3};
  const Box device{{17, 33, 0}, width, width * height};
  const Box host{{5, 7, 0}, 1600, 1600 * 1110};
  Bytes expected(1600 * 1110 * 3, 0x55);
  copy_box(contents, device, expected, host, region);
  Bytes got(expected.size(), 0x55);
  probe.status("read", read_rect(setup.queue, buffer, CL_TRUE, device, region, host, got.data()));
  record_bytes(probe, "read data", got, expected);

  Bytes source = pattern(expected.size(), 11);
  probe.status("write", write_rect(setup.queue, buffer, device, region, host, source.data()));
  copy_box(source, host, contents, device, region);
  record_bytes(probe, "after the write", read_all(setup.queue, buffer, contents.size()), contents);
}

// Host memory mapped from a CL_MEM_ALLOC_HOST_PTR buffer: through a proxy of the node, memory
// the proxy shares, which the native runtime reads and writes itself with the host pitches.
DIFFERENTIAL_TEST(rect_mapped_host, "rectangular transfers to and from a mapped buffer's memory", "[memory][rect]") {
  auto setup = make_setup(probe);
  constexpr size_t width = 512, height = 256;  // 128 KiB on each side
  Bytes contents = pattern(width * height, 13);
  Buffer buffer = buffer_with(setup.context, 0, contents);
  cl_int status = CL_SUCCESS;
  Buffer host_buffer(clCreateBuffer(setup.context, CL_MEM_ALLOC_HOST_PTR, width * height, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  auto* mapped = static_cast<unsigned char*>(clEnqueueMapBuffer(
      setup.queue, host_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, width * height, 0, nullptr, nullptr, &status));
  probe.status("map", status);
  REQUIRE(mapped);
  std::memset(mapped, 0x5A, width * height);
  const std::array<size_t, 3> region{300, 200, 1};
  const Box device{{17, 9, 0}, width, 0};
  const Box host{{3, 5, 0}, 400, 0};
  Bytes expected(width * height, 0x5A);
  copy_box(contents, device, expected, host, region);
  probe.status("read", read_rect(setup.queue, buffer, CL_TRUE, device, region, host, mapped));
  record_bytes(probe, "read data", Bytes(mapped, mapped + width * height), expected);

  const Bytes source = pattern(width * height, 14);
  std::memcpy(mapped, source.data(), source.size());
  probe.status("write", write_rect(setup.queue, buffer, device, region, host, mapped));
  copy_box(source, host, contents, device, region);
  record_bytes(probe, "after the write", read_all(setup.queue, buffer, contents.size()), contents);
  probe.status("unmap", clEnqueueUnmapMemObject(setup.queue, host_buffer, mapped, 0, nullptr, nullptr));
  probe.status("finish", clFinish(setup.queue));
}

DIFFERENTIAL_TEST(rect_errors, "rectangular transfers refuse bad regions, pitches and access", "[memory][rect]") {
  auto setup = make_setup(probe);
  Bytes contents = pattern(16 * 8 * 2, 12);
  Buffer buffer = buffer_with(setup.context, 0, contents);
  Bytes host_memory(1024);
  const Box origin{{0, 0, 0}, 16, 128};
  const Box packed{{0, 0, 0}, 0, 0};
  void* ptr = host_memory.data();
  probe.status("empty region", read_rect(setup.queue, buffer, CL_TRUE, origin, {4, 0, 1}, packed, ptr));
  probe.status("row pitch below the region", read_rect(setup.queue, buffer, CL_TRUE, {{0, 0, 0}, 3, 0}, {4, 2, 1},
                                                       packed, ptr));
  probe.status("slice pitch not a multiple of the row pitch",
               read_rect(setup.queue, buffer, CL_TRUE, {{0, 0, 0}, 16, 130}, {4, 2, 1}, packed, ptr));
  probe.status("host slice pitch too small",
               read_rect(setup.queue, buffer, CL_TRUE, origin, {4, 2, 2}, {{0, 0, 0}, 4, 4}, ptr));
  probe.status("box past the end", read_rect(setup.queue, buffer, CL_TRUE, {{10, 7, 1}, 16, 128}, {8, 1, 1}, packed,
                                             ptr));
  probe.status("no host memory", read_rect(setup.queue, buffer, CL_TRUE, origin, {4, 2, 1}, packed, nullptr));
  probe.status("write past the end", write_rect(setup.queue, buffer, {{0, 0, 2}, 16, 128}, {4, 1, 1}, packed, ptr));
  probe.status("no origin", clEnqueueReadBufferRect(setup.queue, buffer, CL_TRUE, nullptr, packed.origin.data(),
                                                   std::array<size_t, 3>{1, 1, 1}.data(), 0, 0, 0, 0, ptr, 0,
                                                   nullptr, nullptr));
  probe.status("overlapping copy in one buffer",
               copy_rect(setup.queue, buffer, buffer, origin, {{2, 0, 0}, 16, 128}, {8, 2, 1}));
  probe.status("copy past the end",
               copy_rect(setup.queue, buffer, buffer, origin, {{0, 0, 1}, 16, 128}, {8, 2, 2}));
  cl_int status = CL_SUCCESS;
  Buffer hidden(clCreateBuffer(setup.context, CL_MEM_HOST_NO_ACCESS, 256, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  probe.status("read from a host-no-access buffer",
               read_rect(setup.queue, hidden, CL_TRUE, origin, {4, 2, 1}, packed, ptr));
  probe.status("write into a host-no-access buffer", write_rect(setup.queue, hidden, origin, {4, 2, 1}, packed, ptr));
  probe.status("no buffer", read_rect(setup.queue, nullptr, CL_TRUE, origin, {4, 2, 1}, packed, ptr));
}
