// One context over the first two devices of a platform (through HiveCL: devices of two proxies,
// a context spanning both), a queue on each: buffers written on one device and used on the
// other, halves of a buffer (sub-buffers) computed on each, copies, fills, maps, rectangles,
// images and a sampler, events of one queue in the other's wait list, a user event holding both,
// programs from both devices' binaries and from a compile and a link. Every result is checked on
// the host, so the same program checks a native platform too (given one device, both queues are
// on it).
//   spanning-context PLATFORM_NAME
#include <CL/cl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "platform_named.hpp"

namespace {

int failures = 0;

void expect(bool condition, const std::string& what) {
  std::printf("%s: %s\n", condition ? "ok" : "FAILED", what.c_str());
  if (!condition) ++failures;
}

void check(cl_int status, const char* what) {
  if (status == CL_SUCCESS) return;
  std::fprintf(stderr, "spanning-context: %s failed (%d)\n", what, status);
  std::exit(1);
}

const char* source = R"(
__kernel void add(__global int* data, int amount) { data[get_global_id(0)] += amount; }
__kernel void scale(__constant int* from, __global int* to, int factor) {
  to[get_global_id(0)] = from[get_global_id(0)] * factor;
}
__kernel void twice(__global const int* from, __global int* to) { to[get_global_id(0)] = 2 * from[get_global_id(0)]; }
)";

constexpr size_t count = 1 << 16;
constexpr size_t bytes = count * sizeof(int);

struct Setup {
  std::vector<cl_device_id> devices;  // two entries (the same device twice natively, if it has one)
  cl_context context = nullptr;
  cl_command_queue queues[2]{};
  cl_command_queue second_on_1 = nullptr;  // another queue on device 1
  cl_kernel add = nullptr, scale = nullptr, twice = nullptr;
};

Setup open(const char* platform_name) {
  Setup setup;
  cl_platform_id platform = hivecl::test::platform_named(platform_name);
  if (!platform) check(CL_INVALID_PLATFORM, "finding the platform");
  cl_uint found = 0;
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &found), "clGetDeviceIDs");
  std::vector<cl_device_id> devices(found);
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, found, devices.data(), nullptr), "clGetDeviceIDs");
  devices.resize(std::min<cl_uint>(found, 2));
  cl_int status = CL_SUCCESS;
  const auto asked = static_cast<cl_uint>(devices.size());
  setup.context = clCreateContext(nullptr, asked, devices.data(), nullptr, nullptr, &status);
  check(status, "clCreateContext");
  if (devices.size() == 1) devices.push_back(devices.front());
  setup.devices = devices;
  std::printf("devices: %zu distinct\n", devices[0] == devices[1] ? size_t{1} : size_t{2});
  for (int i = 0; i < 2; ++i) {
    setup.queues[i] = clCreateCommandQueueWithProperties(setup.context, devices[i], nullptr, &status);
    check(status, "clCreateCommandQueueWithProperties");
  }
  setup.second_on_1 = clCreateCommandQueueWithProperties(setup.context, devices[1], nullptr, &status);
  check(status, "clCreateCommandQueueWithProperties");
  cl_program program = clCreateProgramWithSource(setup.context, 1, &source, nullptr, &status);
  check(status, "clCreateProgramWithSource");
  check(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr), "clBuildProgram");
  for (cl_device_id device : devices) {
    cl_build_status built = CL_BUILD_NONE;
    check(clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof built, &built, nullptr),
          "clGetProgramBuildInfo");
    expect(built == CL_BUILD_SUCCESS, "the program is built for each device");
  }
  setup.add = clCreateKernel(program, "add", &status);
  check(status, "clCreateKernel");
  setup.scale = clCreateKernel(program, "scale", &status);
  check(status, "clCreateKernel");
  setup.twice = clCreateKernel(program, "twice", &status);
  check(status, "clCreateKernel");
  clReleaseProgram(program);
  return setup;
}

cl_mem buffer(const Setup& setup, cl_mem_flags flags, size_t size, void* host = nullptr) {
  cl_int status = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(setup.context, flags, size, host, &status);
  check(status, "clCreateBuffer");
  return mem;
}

void add(const Setup& setup, int queue, cl_mem mem, int amount, size_t items, cl_uint waits = 0,
         const cl_event* wait_list = nullptr, cl_event* done = nullptr) {
  check(clSetKernelArg(setup.add, 0, sizeof mem, &mem), "clSetKernelArg");
  check(clSetKernelArg(setup.add, 1, sizeof amount, &amount), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(setup.queues[queue], setup.add, 1, nullptr, &items, nullptr, waits, wait_list, done),
        "clEnqueueNDRangeKernel");
}

std::vector<int> read(const Setup& setup, int queue, cl_mem mem, size_t items) {
  std::vector<int> values(items);
  check(clEnqueueReadBuffer(setup.queues[queue], mem, CL_TRUE, 0, items * sizeof(int), values.data(), 0, nullptr,
                            nullptr),
        "clEnqueueReadBuffer");
  return values;
}

std::vector<int> iota(int first) {
  std::vector<int> values(count);
  std::iota(values.begin(), values.end(), first);
  return values;
}

std::vector<int> plus(std::vector<int> values, int amount) {
  for (int& value : values) value += amount;
  return values;
}

// Written on one device, changed on the other, read back on the first; then the other way.
void ping_pong(const Setup& setup) {
  const std::vector<int> initial = iota(0);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE, bytes);
  check(clEnqueueWriteBuffer(setup.queues[0], mem, CL_TRUE, 0, bytes, initial.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  add(setup, 1, mem, 5, count);
  check(clFinish(setup.queues[1]), "clFinish");
  expect(read(setup, 0, mem, count) == plus(initial, 5), "written on device 0, added to on device 1, read on 0");
  add(setup, 0, mem, 2, count);
  check(clFinish(setup.queues[0]), "clFinish");
  add(setup, 1, mem, 3, count);
  expect(read(setup, 1, mem, count) == plus(initial, 10), "added to on each in turn, read on device 1");
  // A clone of the kernel, its arguments set (last on device 1), launched on each device.
  cl_int status = CL_SUCCESS;
  cl_kernel clone = clCloneKernel(setup.add, &status);
  check(status, "clCloneKernel");
  for (cl_command_queue queue : {setup.queues[0], setup.queues[1]}) {
    check(clEnqueueNDRangeKernel(queue, clone, 1, nullptr, &count, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFinish(queue), "clFinish");
  }
  expect(read(setup, 0, mem, count) == plus(initial, 16), "a clone of the kernel launched on each device");
  clReleaseKernel(clone);
  clReleaseMemObject(mem);
}

// A buffer made from host data, its halves (sub-buffers) each changed on its own device.
void halves(const Setup& setup) {
  std::vector<int> initial = iota(100);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, initial.data());
  cl_mem half[2];
  for (int i = 0; i < 2; ++i) {
    const cl_buffer_region region{i * bytes / 2, bytes / 2};
    cl_int status = CL_SUCCESS;
    half[i] = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
    check(status, "clCreateSubBuffer");
  }
  add(setup, 0, half[0], 1, count / 2);
  add(setup, 1, half[1], 7, count / 2);
  check(clFinish(setup.queues[0]), "clFinish");
  check(clFinish(setup.queues[1]), "clFinish");
  std::vector<int> expected = initial;
  for (size_t i = 0; i < count; ++i) expected[i] += i < count / 2 ? 1 : 7;
  expect(read(setup, 0, mem, count) == expected, "each half changed on its own device, the whole read on device 0");
  expect(read(setup, 1, mem, count) == expected, "the same read on device 1");
  for (cl_mem sub : half) clReleaseMemObject(sub);
  clReleaseMemObject(mem);
}

// A copy and a fill on one device of data made on the other; a __constant argument.
void copy_fill_scale(const Setup& setup) {
  const std::vector<int> initial = iota(-50);
  cl_mem from = buffer(setup, CL_MEM_READ_WRITE, bytes);
  cl_mem to = buffer(setup, CL_MEM_READ_WRITE, bytes);
  check(clEnqueueWriteBuffer(setup.queues[0], from, CL_TRUE, 0, bytes, initial.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  check(clEnqueueCopyBuffer(setup.queues[1], from, to, 0, 0, bytes, 0, nullptr, nullptr), "clEnqueueCopyBuffer");
  const int pattern = 9;
  check(clEnqueueFillBuffer(setup.queues[1], to, &pattern, sizeof pattern, bytes / 2, bytes / 4, 0, nullptr, nullptr),
        "clEnqueueFillBuffer");
  check(clFinish(setup.queues[1]), "clFinish");
  std::vector<int> expected = initial;
  for (size_t i = count / 2; i < count / 2 + count / 4; ++i) expected[i] = pattern;
  expect(read(setup, 0, to, count) == expected, "copied and filled on device 1, read on device 0");
  // The first items of `to`, scaled into `from` (a __constant argument small enough for any device).
  const int factor = 3;
  const size_t scaled = 4096;
  check(clSetKernelArg(setup.scale, 0, sizeof to, &to), "clSetKernelArg");
  check(clSetKernelArg(setup.scale, 1, sizeof from, &from), "clSetKernelArg");
  check(clSetKernelArg(setup.scale, 2, sizeof factor, &factor), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(setup.queues[1], setup.scale, 1, nullptr, &scaled, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  check(clFinish(setup.queues[1]), "clFinish");
  for (size_t i = 0; i < count; ++i) expected[i] = i < scaled ? expected[i] * factor : initial[i];
  expect(read(setup, 0, from, count) == expected, "scaled on device 1 from a __constant buffer, read on device 0");
  std::vector<int> rect(16 * 4);
  const size_t origin[3] = {0, 0, 0}, host_origin[3] = {0, 0, 0}, region[3] = {16 * sizeof(int), 4, 1};
  check(clEnqueueReadBufferRect(setup.queues[0], from, CL_TRUE, origin, host_origin, region, 64 * sizeof(int), 0,
                                16 * sizeof(int), 0, rect.data(), 0, nullptr, nullptr),
        "clEnqueueReadBufferRect");
  bool rows = true;
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 16; ++x) rows = rows && rect[y * 16 + x] == expected[y * 64 + x];
  expect(rows, "a rectangle of it read on device 0");
  clReleaseMemObject(from);
  clReleaseMemObject(to);
}

// A map on one device of data made on the other; the unmapped changes seen on the first.
void map_unmap(const Setup& setup) {
  const std::vector<int> initial = iota(1000);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE, bytes);
  check(clEnqueueWriteBuffer(setup.queues[0], mem, CL_TRUE, 0, bytes, initial.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  cl_int status = CL_SUCCESS;
  auto* mapped = static_cast<int*>(clEnqueueMapBuffer(setup.queues[1], mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                      bytes, 0, nullptr, nullptr, &status));
  check(status, "clEnqueueMapBuffer");
  expect(std::vector<int>(mapped, mapped + count) == initial, "written on device 0, mapped on device 1");
  for (size_t i = 0; i < count; ++i) mapped[i] *= 2;
  check(clEnqueueUnmapMemObject(setup.queues[1], mem, mapped, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  check(clFinish(setup.queues[1]), "clFinish");
  std::vector<int> expected = initial;
  for (int& value : expected) value *= 2;
  expect(read(setup, 0, mem, count) == expected, "changed through the mapping, read on device 0");
  clReleaseMemObject(mem);
}

const char* image_source = R"(
__kernel void shift(read_only image2d_t from, write_only image2d_t to, sampler_t sampler, int amount) {
  const int2 at = (int2)(get_global_id(0), get_global_id(1));
  write_imagei(to, at, read_imagei(from, sampler, at) + amount);
}
)";

constexpr size_t image_width = 256, image_height = count / image_width;

cl_mem image(const Setup& setup, cl_mem_flags flags, void* host = nullptr) {
  const cl_image_format format{CL_R, CL_SIGNED_INT32};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = image_width;
  desc.image_height = image_height;
  cl_int status = CL_SUCCESS;
  cl_mem mem = clCreateImage(setup.context, flags, &format, &desc, host, &status);
  check(status, "clCreateImage");
  return mem;
}

constexpr size_t image_origin[3] = {0, 0, 0}, whole_image[3] = {image_width, image_height, 1};

std::vector<int> read_image(const Setup& setup, int queue, cl_mem mem) {
  std::vector<int> values(count);
  check(clEnqueueReadImage(setup.queues[queue], mem, CL_TRUE, image_origin, whole_image, 0, 0, values.data(), 0,
                           nullptr, nullptr),
        "clEnqueueReadImage");
  return values;
}

// `to` = `from` + `amount`, by a kernel with a sampler on device `queue`.
void shift(const Setup& setup, cl_kernel kernel, int queue, cl_mem from, cl_mem to, int amount) {
  check(clSetKernelArg(kernel, 0, sizeof from, &from), "clSetKernelArg");
  check(clSetKernelArg(kernel, 1, sizeof to, &to), "clSetKernelArg");
  check(clSetKernelArg(kernel, 3, sizeof amount, &amount), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(setup.queues[queue], kernel, 2, nullptr, whole_image, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  check(clFinish(setup.queues[queue]), "clFinish");
}

// Images made from host data on one device, used by kernels (with a sampler), read, filled,
// copied and mapped on the other.
void images(const Setup& setup) {
  cl_uint formats = 0;
  check(clGetSupportedImageFormats(setup.context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &formats),
        "clGetSupportedImageFormats");
  expect(formats > 0, "the context supports image formats");
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(setup.context, 1, &image_source, nullptr, &status);
  check(status, "clCreateProgramWithSource");
  check(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr), "clBuildProgram");
  cl_kernel kernel = clCreateKernel(program, "shift", &status);
  check(status, "clCreateKernel");
  cl_sampler sampler = clCreateSampler(setup.context, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &status);
  check(status, "clCreateSampler");
  check(clSetKernelArg(kernel, 2, sizeof sampler, &sampler), "clSetKernelArg");

  std::vector<int> initial = iota(0);
  cl_mem a = image(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, initial.data());
  cl_mem b = image(setup, CL_MEM_READ_WRITE), c = image(setup, CL_MEM_READ_WRITE);
  shift(setup, kernel, 1, a, b, 1);
  shift(setup, kernel, 0, b, c, 2);
  expect(read_image(setup, 1, c) == plus(initial, 3), "shifted on device 1, then on device 0, read on device 1");

  const cl_int seven[4] = {7, 0, 0, 0};
  const size_t lower_half[3] = {0, image_height / 2, 0}, half[3] = {image_width, image_height / 2, 1};
  check(clEnqueueFillImage(setup.queues[0], b, seven, lower_half, half, 0, nullptr, nullptr), "clEnqueueFillImage");
  check(clFinish(setup.queues[0]), "clFinish");
  std::vector<int> expected = plus(initial, 1);
  std::fill(expected.begin() + count / 2, expected.end(), 7);
  expect(read_image(setup, 1, b) == expected, "made on device 1, half filled on device 0, read on device 1");

  check(clEnqueueCopyImage(setup.queues[1], c, a, image_origin, image_origin, whole_image, 0, nullptr, nullptr),
        "clEnqueueCopyImage");
  check(clFinish(setup.queues[1]), "clFinish");
  expect(read_image(setup, 0, a) == plus(initial, 3), "copied over on device 1, read on device 0");

  size_t row_pitch = 0;
  auto* mapped = static_cast<int*>(clEnqueueMapImage(setup.queues[1], a, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                                     image_origin, whole_image, &row_pitch, nullptr, 0, nullptr,
                                                     nullptr, &status));
  check(status, "clEnqueueMapImage");
  bool mapped_right = true;
  for (size_t y = 0; y < image_height; ++y)
    for (size_t x = 0; x < image_width; ++x) {
      int& pixel = mapped[y * row_pitch / sizeof(int) + x];
      mapped_right = mapped_right && pixel == static_cast<int>(y * image_width + x) + 3;
      pixel *= 2;
    }
  expect(mapped_right, "mapped on device 1");
  check(clEnqueueUnmapMemObject(setup.queues[1], a, mapped, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  check(clFinish(setup.queues[1]), "clFinish");
  expected = plus(initial, 3);
  for (int& value : expected) value *= 2;
  cl_mem copy = buffer(setup, CL_MEM_READ_WRITE, bytes);
  check(clEnqueueCopyImageToBuffer(setup.queues[0], a, copy, image_origin, whole_image, 0, 0, nullptr, nullptr),
        "clEnqueueCopyImageToBuffer");
  check(clFinish(setup.queues[0]), "clFinish");
  expect(read(setup, 1, copy, count) == expected, "changed through the mapping, copied to a buffer on device 0");

  for (cl_mem mem : {a, b, c, copy}) clReleaseMemObject(mem);
  clReleaseSampler(sampler);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}

// A buffer of several of the pieces data moves in (16 MiB), and a part of one, written on device 0,
// added to on device 1, read back on device 0: each piece lands where it belongs.
void buffer_in_pieces(const Setup& setup) {
  const size_t items = (size_t{40} << 20) / sizeof(int) + 3;
  std::vector<int> initial(items);
  std::iota(initial.begin(), initial.end(), 11);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE, items * sizeof(int));
  check(clEnqueueWriteBuffer(setup.queues[0], mem, CL_TRUE, 0, items * sizeof(int), initial.data(), 0, nullptr,
                             nullptr),
        "clEnqueueWriteBuffer");
  add(setup, 1, mem, 6, items);
  check(clFinish(setup.queues[1]), "clFinish");
  expect(read(setup, 0, mem, items) == plus(initial, 6), "40 MiB written on device 0, added to on device 1, read on 0");
  clReleaseMemObject(mem);
}

// An image of several of the pieces data moves in (16 MiB), made from host data on device 0, a
// box of it filled on device 1, read back on device 0. `desc`: its type and size.
void image_moved_in_pieces(const Setup& setup, const cl_image_desc& desc, const std::string& what) {
  const cl_image_format format{CL_R, CL_SIGNED_INT32};
  const bool array = desc.image_type == CL_MEM_OBJECT_IMAGE2D_ARRAY;
  const size_t region[3] = {desc.image_width, desc.image_height, array ? desc.image_array_size : desc.image_depth};
  std::vector<int> expected(region[0] * region[1] * region[2]);
  std::iota(expected.begin(), expected.end(), 0);
  cl_int status = CL_SUCCESS;
  cl_mem mem = clCreateImage(setup.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &format, &desc,
                             expected.data(), &status);
  check(status, "clCreateImage");
  const cl_int minus_one[4] = {-1, 0, 0, 0};
  const size_t box_origin[3] = {3, 5, region[2] - 2}, box[3] = {7, 2, 2};
  check(clEnqueueFillImage(setup.queues[1], mem, minus_one, box_origin, box, 0, nullptr, nullptr),
        "clEnqueueFillImage");
  check(clFinish(setup.queues[1]), "clFinish");
  for (size_t z = box_origin[2]; z < box_origin[2] + box[2]; ++z)
    for (size_t y = box_origin[1]; y < box_origin[1] + box[1]; ++y)
      for (size_t x = box_origin[0]; x < box_origin[0] + box[0]; ++x)
        expected[(z * region[1] + y) * region[0] + x] = -1;
  std::vector<int> values(expected.size());
  check(clEnqueueReadImage(setup.queues[0], mem, CL_TRUE, image_origin, region, 0, 0, values.data(), 0, nullptr,
                           nullptr),
        "clEnqueueReadImage");
  expect(values == expected, what + " made on device 0, a box filled on device 1, read on device 0");
  clReleaseMemObject(mem);
}

// Pieces of whole slices (a 3D image of 65 slices of 1 MiB), and pieces of one layer larger
// than a piece (a 2D image array of two layers of 17 MiB).
void image_in_pieces(const Setup& setup) {
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE3D;
  desc.image_width = desc.image_height = 512;
  desc.image_depth = 65;
  image_moved_in_pieces(setup, desc, "a 3D image of 68 MB");
  desc = {};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY;
  desc.image_width = 4096;
  desc.image_height = 1100;
  desc.image_array_size = 2;
  image_moved_in_pieces(setup, desc, "a 2D image array of two 18 MB layers");
}

// Commands of one queue wait for the other's, and both for a user event set last.
void events(const Setup& setup) {
  const std::vector<int> initial = iota(7);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE, bytes);
  cl_int status = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(setup.context, &status);
  check(status, "clCreateUserEvent");
  cl_event written = nullptr, added = nullptr, read_done = nullptr;
  check(clEnqueueWriteBuffer(setup.queues[0], mem, CL_FALSE, 0, bytes, initial.data(), 1, &gate, &written),
        "clEnqueueWriteBuffer");
  std::vector<int> values(count);
  // The other device's command needs the data `written` makes: the enqueue must not wait for it
  // (the gate is set only afterwards).
  add(setup, 1, mem, 4, count, 1, &written, &added);
  check(clEnqueueReadBuffer(setup.queues[0], mem, CL_FALSE, 0, bytes, values.data(), 1, &added, &read_done),
        "clEnqueueReadBuffer");
  check(clFlush(setup.queues[1]), "clFlush");
  check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  const cl_event all[3] = {written, added, read_done};
  check(clWaitForEvents(3, all), "clWaitForEvents");
  expect(values == plus(initial, 4), "write on 0, kernel on 1 waiting for it, read on 0 waiting for that");
  cl_int state = CL_QUEUED;
  check(clGetEventInfo(added, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, nullptr), "clGetEventInfo");
  expect(state == CL_COMPLETE, "the other device's event reports its completion");
  for (cl_event event : {gate, written, added, read_done}) clReleaseEvent(event);
  clReleaseMemObject(mem);

  // A marker of device 1 waits for one of device 0 that waits for a user event set only after
  // both are enqueued: the enqueue on device 1 must not wait (it would wait for ever).
  cl_event held_gate = clCreateUserEvent(setup.context, &status);
  check(status, "clCreateUserEvent");
  cl_event held = nullptr, after = nullptr;
  check(clEnqueueMarkerWithWaitList(setup.queues[0], 1, &held_gate, &held), "clEnqueueMarkerWithWaitList");
  check(clEnqueueMarkerWithWaitList(setup.queues[1], 1, &held, &after), "clEnqueueMarkerWithWaitList");
  check(clFlush(setup.queues[1]), "clFlush");
  check(clSetUserEventStatus(held_gate, CL_COMPLETE), "clSetUserEventStatus");
  check(clWaitForEvents(1, &after), "clWaitForEvents");
  check(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, nullptr), "clGetEventInfo");
  expect(state == CL_COMPLETE, "a wait for the other device's command held by a user event set afterwards");
  for (cl_event event : {held_gate, held, after}) clReleaseEvent(event);
}

// While a buffer's writer on device 0 waits for a user event, and a command of device 1 waits
// for that buffer, another buffer written on device 0 (by another queue) is read on device 1
// (by another queue) before the event is set: that read must not wait for the event.
void held_writer(const Setup& setup) {
  std::vector<int> held_values = iota(0), free_values = iota(500);
  cl_mem held = buffer(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, held_values.data());
  cl_mem free = buffer(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, free_values.data());
  cl_int status = CL_SUCCESS;
  cl_command_queue second_on_0 = clCreateCommandQueueWithProperties(setup.context, setup.devices[0], nullptr, &status);
  check(status, "clCreateCommandQueueWithProperties");
  cl_event gate = clCreateUserEvent(setup.context, &status);
  check(status, "clCreateUserEvent");
  cl_event held_written = nullptr, held_added = nullptr, free_written = nullptr;
  add(setup, 0, held, 1, count, 1, &gate, &held_written);
  add(setup, 1, held, 2, count, 1, &held_written, &held_added);
  const int amount = 5;
  check(clSetKernelArg(setup.add, 0, sizeof free, &free), "clSetKernelArg");
  check(clSetKernelArg(setup.add, 1, sizeof amount, &amount), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(second_on_0, setup.add, 1, nullptr, &count, nullptr, 0, nullptr, &free_written),
        "clEnqueueNDRangeKernel");
  std::vector<int> values(count);
  check(clEnqueueReadBuffer(setup.second_on_1, free, CL_TRUE, 0, bytes, values.data(), 1, &free_written, nullptr),
        "clEnqueueReadBuffer");
  expect(values == plus(free_values, amount), "read on device 1 while another buffer's writer on device 0 is held");
  check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  check(clWaitForEvents(1, &held_added), "clWaitForEvents");
  expect(read(setup, 0, held, count) == plus(held_values, 3), "the held writer's buffer, added to on device 1");
  for (cl_event event : {gate, held_written, held_added, free_written}) clReleaseEvent(event);
  clReleaseCommandQueue(second_on_0);
  clReleaseMemObject(held);
  clReleaseMemObject(free);
}

// More buffers than a proxy has staging slots (4 by default), each written on device 0 once one
// user event is set and then added to on device 1: every enqueue returns before the event is set
// (the moves to device 1 wait for their writers without holding the proxies up).
void many_held_writers(const Setup& setup) {
  constexpr size_t buffers = 9;
  std::vector<int> initial = iota(40);
  cl_int status = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(setup.context, &status);
  check(status, "clCreateUserEvent");
  std::vector<cl_mem> mems;
  std::vector<cl_event> added(buffers);
  for (size_t i = 0; i < buffers; ++i) {
    mems.push_back(buffer(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, initial.data()));
    cl_event written = nullptr;
    add(setup, 0, mems[i], static_cast<int>(i), count, 1, &gate, &written);
    add(setup, 1, mems[i], 100, count, 1, &written, &added[i]);
    clReleaseEvent(written);
  }
  check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  check(clWaitForEvents(static_cast<cl_uint>(buffers), added.data()), "clWaitForEvents");
  bool all_right = true;
  for (size_t i = 0; i < buffers; ++i)
    all_right = all_right && read(setup, 1, mems[i], count) == plus(initial, static_cast<int>(i) + 100);
  expect(all_right, "nine buffers written on device 0 behind one user event, each added to on device 1");
  for (cl_event event : added) clReleaseEvent(event);
  for (cl_mem mem : mems) clReleaseMemObject(mem);
  clReleaseEvent(gate);
}

// Data written on device 0 once a user event is set, read by two kernels of two queues of
// device 1 that each wait for the write: each must see the data, though only the first one's use
// made it move there (large, so that a kernel not waiting for it to land would run first); and
// neither enqueue may wait for the user event, set only afterwards.
void two_readers(const Setup& setup) {
  const size_t items = count * 64;
  const std::vector<int> initial(items, 5);
  cl_mem from = buffer(setup, CL_MEM_READ_WRITE, items * sizeof(int));
  cl_mem to[2] = {buffer(setup, CL_MEM_READ_WRITE, items * sizeof(int)),
                  buffer(setup, CL_MEM_READ_WRITE, items * sizeof(int))};
  cl_int status = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(setup.context, &status);
  check(status, "clCreateUserEvent");
  cl_event written = nullptr;
  check(clEnqueueWriteBuffer(setup.queues[0], from, CL_FALSE, 0, items * sizeof(int), initial.data(), 1, &gate,
                             &written),
        "clEnqueueWriteBuffer");
  check(clFlush(setup.queues[0]), "clFlush");
  const cl_command_queue readers[2] = {setup.queues[1], setup.second_on_1};
  for (int i = 0; i < 2; ++i) {
    check(clSetKernelArg(setup.twice, 0, sizeof from, &from), "clSetKernelArg");
    check(clSetKernelArg(setup.twice, 1, sizeof to[i], &to[i]), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(readers[i], setup.twice, 1, nullptr, &items, nullptr, 1, &written, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFlush(readers[i]), "clFlush");
  }
  check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  for (cl_command_queue queue : readers) check(clFinish(queue), "clFinish");
  const std::vector<int> expected(items, 10);
  expect(read(setup, 0, to[0], items) == expected, "written on device 0, doubled by a kernel of device 1");
  expect(read(setup, 0, to[1], items) == expected, "the same by a kernel of another queue of device 1");
  for (cl_event event : {gate, written}) clReleaseEvent(event);
  for (cl_mem mem : {from, to[0], to[1]}) clReleaseMemObject(mem);
}

// A kernel of `program` adds 1 on each queue's device; the result read on device 0.
bool runs_on_both(const Setup& setup, cl_program program) {
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, "add", &status);
  check(status, "clCreateKernel");
  const std::vector<int> initial = iota(3);
  cl_mem mem = buffer(setup, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, const_cast<int*>(initial.data()));
  const int amount = 1;
  check(clSetKernelArg(kernel, 0, sizeof mem, &mem), "clSetKernelArg");
  check(clSetKernelArg(kernel, 1, sizeof amount, &amount), "clSetKernelArg");
  for (cl_command_queue queue : setup.queues) {
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &count, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFinish(queue), "clFinish");
  }
  const bool right = read(setup, 0, mem, count) == plus(initial, 2);
  clReleaseMemObject(mem);
  clReleaseKernel(kernel);
  return right;
}

// Programs from the binaries of every device of the context, and compiled then linked.
void binaries_and_linking(const Setup& setup) {
  cl_program built = nullptr;
  check(clGetKernelInfo(setup.add, CL_KERNEL_PROGRAM, sizeof built, &built, nullptr), "clGetKernelInfo");
  cl_uint devices = 0;
  check(clGetProgramInfo(built, CL_PROGRAM_NUM_DEVICES, sizeof devices, &devices, nullptr), "clGetProgramInfo");
  std::vector<size_t> sizes(devices);
  check(clGetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, devices * sizeof(size_t), sizes.data(), nullptr),
        "clGetProgramInfo");
  std::vector<std::vector<unsigned char>> binaries;
  std::vector<unsigned char*> pointers;
  for (size_t size : sizes) pointers.push_back(binaries.emplace_back(size).data());
  check(clGetProgramInfo(built, CL_PROGRAM_BINARIES, devices * sizeof(unsigned char*), pointers.data(), nullptr),
        "clGetProgramInfo");
  std::vector<cl_device_id> list(devices);
  check(clGetProgramInfo(built, CL_PROGRAM_DEVICES, devices * sizeof(cl_device_id), list.data(), nullptr),
        "clGetProgramInfo");
  std::vector<cl_int> binary_status(devices, CL_INVALID_VALUE);
  cl_int status = CL_SUCCESS;
  cl_program from_binaries = clCreateProgramWithBinary(
      setup.context, devices, list.data(), sizes.data(), const_cast<const unsigned char**>(pointers.data()),
      binary_status.data(), &status);
  check(status, "clCreateProgramWithBinary");
  for (cl_int each : binary_status) expect(each == CL_SUCCESS, "a device's binary is accepted");
  check(clBuildProgram(from_binaries, 0, nullptr, "", nullptr, nullptr), "clBuildProgram");
  expect(runs_on_both(setup, from_binaries), "a program from every device's binary runs on both devices");
  clReleaseProgram(from_binaries);

  cl_program compiled = clCreateProgramWithSource(setup.context, 1, &source, nullptr, &status);
  check(status, "clCreateProgramWithSource");
  check(clCompileProgram(compiled, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr), "clCompileProgram");
  cl_program linked = clLinkProgram(setup.context, 0, nullptr, "", 1, &compiled, nullptr, nullptr, &status);
  check(status, "clLinkProgram");
  expect(runs_on_both(setup, linked), "a compiled and linked program runs on both devices");
  clReleaseProgram(linked);
  clReleaseProgram(compiled);
}

void limits(const Setup& setup) {
  cl_uint devices = 0;
  check(clGetContextInfo(setup.context, CL_CONTEXT_NUM_DEVICES, sizeof devices, &devices, nullptr), "clGetContextInfo");
  expect(devices == (setup.devices[0] == setup.devices[1] ? 1u : 2u), "the context has every device asked for");
  size_t size = 0;
  check(clGetKernelWorkGroupInfo(setup.add, setup.devices[1], CL_KERNEL_WORK_GROUP_SIZE, sizeof size, &size, nullptr),
        "clGetKernelWorkGroupInfo");
  expect(size > 0, "the kernel's work-group size on device 1");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spanning-context PLATFORM_NAME [CASE...]\n");
    return 2;
  }
  const std::vector<std::pair<std::string, void (*)(const Setup&)>> cases = {
      {"limits", limits},       {"ping_pong", ping_pong},           {"halves", halves},
      {"copy_fill_scale", copy_fill_scale}, {"map_unmap", map_unmap}, {"images", images},
      {"buffer_in_pieces", buffer_in_pieces}, {"image_in_pieces", image_in_pieces}, {"events", events},
      {"two_readers", two_readers}, {"many_held_writers", many_held_writers},
      {"held_writer", held_writer}, {"binaries_and_linking", binaries_and_linking}};
  const std::vector<std::string> chosen(argv + 2, argv + argc);
  for (const std::string& name : chosen)
    if (std::ranges::find(cases, name, &decltype(cases)::value_type::first) == cases.end()) {
      std::fprintf(stderr, "spanning-context: no case %s\n", name.c_str());
      return 2;
    }
  Setup setup = open(argv[1]);
  for (const auto& [name, run] : cases)
    if (chosen.empty() || std::ranges::find(chosen, name) != chosen.end()) run(setup);
  for (cl_kernel kernel : {setup.add, setup.scale, setup.twice}) clReleaseKernel(kernel);
  for (cl_command_queue queue : {setup.queues[0], setup.queues[1], setup.second_on_1}) clReleaseCommandQueue(queue);
  clReleaseContext(setup.context);
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
