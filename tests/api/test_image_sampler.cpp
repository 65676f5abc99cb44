// Images and samplers, natively and through HiveCL: device limits, formats, creation and
// queries, transfers with pitches, copies, fills, mappings, image<->buffer copies, a kernel
// that samples an image, and the error codes of bad input.
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
using Sampler = Owned<cl_sampler, clReleaseSampler>;

constexpr cl_image_format rgba8{CL_RGBA, CL_UNORM_INT8};
constexpr size_t pixel = 4;  // bytes of an RGBA8 pixel

Bytes sample(size_t size, unsigned seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 37 + (i >> 9) + seed * 11 + 3);
  return bytes;
}

cl_image_desc desc_of(cl_mem_object_type type, size_t width, size_t height = 0, size_t depth = 0,
                      size_t array_size = 0) {
  cl_image_desc desc{};
  desc.image_type = type;
  desc.image_width = width;
  desc.image_height = height;
  desc.image_depth = depth;
  desc.image_array_size = array_size;
  return desc;
}

// Creates an image and records the status under `what`.
Buffer create_image(Probe& probe, const std::string& what, cl_context context, cl_mem_flags flags,
                    const cl_image_format* format, const cl_image_desc* desc, void* host_ptr = nullptr) {
  cl_int status = CL_SUCCESS;
  Buffer image(clCreateImage(context, flags, format, desc, host_ptr, &status));
  probe.status(what, status);
  CHECK((image.get() != nullptr) == (status == CL_SUCCESS));
  return image;
}

// Where PoCL 3.1 departs from the specification (it accepts, or answers another code), the
// native answer is not compared: HiveCL must give the specification's.
void expect_on_hivecl(Probe& probe, const std::string& what, cl_int status, cl_int expected) {
  INFO(what);
  if (probe.hivecl()) CHECK(status_name(status) == status_name(expected));
}

// Creates an image where PoCL departs from the specification (see expect_on_hivecl).
void create_image_per_spec(Probe& probe, const std::string& what, cl_int expected, cl_context context,
                           cl_mem_flags flags, const cl_image_format* format, const cl_image_desc* desc,
                           void* host_ptr = nullptr) {
  cl_int status = CL_SUCCESS;
  Buffer image(clCreateImage(context, flags, format, desc, host_ptr, &status));
  expect_on_hivecl(probe, what, status, expected);
}

// An image the test needs, not one it observes.
Buffer make_image(cl_context context, cl_mem_flags flags, const cl_image_desc& desc, void* host_ptr = nullptr,
                  const cl_image_format& format = rgba8) {
  cl_int status = CL_SUCCESS;
  Buffer image(clCreateImage(context, flags, &format, &desc, host_ptr, &status));
  REQUIRE(status == CL_SUCCESS);
  return image;
}

Buffer make_buffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr = nullptr) {
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(context, flags, size, host_ptr, &status));
  REQUIRE(status == CL_SUCCESS);
  return buffer;
}

void record_data(Probe& probe, const std::string& what, const Bytes& bytes, const Bytes& expected) {
  probe.record(what, checksum(bytes.data(), bytes.size()));
  const bool intact = bytes == expected;
  CHECK(intact);
}

Bytes read_image(cl_command_queue queue, cl_mem image, std::array<size_t, 3> origin, std::array<size_t, 3> region) {
  Bytes bytes(region[0] * region[1] * region[2] * pixel);
  REQUIRE(clEnqueueReadImage(queue, image, CL_TRUE, origin.data(), region.data(), 0, 0, bytes.data(), 0, nullptr,
                             nullptr) == CL_SUCCESS);
  return bytes;
}

// The pixels of `region` at `origin` of a packed width x height (x depth) RGBA8 picture.
Bytes crop(const Bytes& picture, size_t width, size_t height, std::array<size_t, 3> origin,
           std::array<size_t, 3> region) {
  Bytes out;
  for (size_t z = 0; z < region[2]; ++z)
    for (size_t y = 0; y < region[1]; ++y) {
      const size_t at = (((origin[2] + z) * height + origin[1] + y) * width + origin[0]) * pixel;
      out.insert(out.end(), picture.begin() + static_cast<ptrdiff_t>(at),
                 picture.begin() + static_cast<ptrdiff_t>(at + region[0] * pixel));
    }
  return out;
}

}  // namespace

DIFFERENTIAL_TEST(image_device_limits, "devices report their image support and limits", "[image]") {
  cl_device_id device = probe.device();
  const auto size_param = [&](const char* name, cl_device_info param) {
    size_t value = 0;
    probe.status(std::string(name) + " status", clGetDeviceInfo(device, param, sizeof value, &value, nullptr));
    probe.value(name, value);
  };
  const auto uint_param = [&](const char* name, cl_device_info param) {
    cl_uint value = 0;
    probe.status(std::string(name) + " status", clGetDeviceInfo(device, param, sizeof value, &value, nullptr));
    probe.value(name, value);
  };
  cl_bool supported = CL_FALSE;
  REQUIRE(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof supported, &supported, nullptr) == CL_SUCCESS);
  probe.value("image support", supported);
  CHECK(supported == CL_TRUE);  // PoCL's CPU device supports images
  size_param("2D max width", CL_DEVICE_IMAGE2D_MAX_WIDTH);
  size_param("2D max height", CL_DEVICE_IMAGE2D_MAX_HEIGHT);
  size_param("3D max width", CL_DEVICE_IMAGE3D_MAX_WIDTH);
  size_param("3D max height", CL_DEVICE_IMAGE3D_MAX_HEIGHT);
  size_param("3D max depth", CL_DEVICE_IMAGE3D_MAX_DEPTH);
  size_param("max buffer size", CL_DEVICE_IMAGE_MAX_BUFFER_SIZE);
  size_param("max array size", CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
  uint_param("max read image args", CL_DEVICE_MAX_READ_IMAGE_ARGS);
  uint_param("max write image args", CL_DEVICE_MAX_WRITE_IMAGE_ARGS);
  uint_param("max samplers", CL_DEVICE_MAX_SAMPLERS);
  uint_param("pitch alignment", CL_DEVICE_IMAGE_PITCH_ALIGNMENT);
  uint_param("base address alignment", CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT);
}

DIFFERENTIAL_TEST(image_formats, "clGetSupportedImageFormats lists the native context's formats", "[image]") {
  const Setup setup = make_setup(probe);
  for (cl_mem_object_type type : {CL_MEM_OBJECT_IMAGE2D, CL_MEM_OBJECT_IMAGE3D, CL_MEM_OBJECT_IMAGE1D_BUFFER}) {
    const std::string what = "type " + std::to_string(type);
    cl_uint count = 0;
    probe.status(what + ": count", clGetSupportedImageFormats(setup.context, CL_MEM_READ_ONLY, type, 0, nullptr, &count));
    probe.value(what + ": formats", count);
    std::vector<cl_image_format> formats(count);
    if (count)
      probe.status(what + ": list", clGetSupportedImageFormats(setup.context, CL_MEM_READ_ONLY, type, count,
                                                                formats.data(), nullptr));
    for (const cl_image_format& format : formats)
      probe.value(what + ": format", std::to_string(format.image_channel_order) + "/" +
                                         std::to_string(format.image_channel_data_type));
  }
  cl_uint count = 0;
  probe.status("buffer type", clGetSupportedImageFormats(setup.context, 0, CL_MEM_OBJECT_BUFFER, 0, nullptr, &count));
  cl_image_format one{};
  probe.status("entries 0 with a list", clGetSupportedImageFormats(setup.context, 0, CL_MEM_OBJECT_IMAGE2D, 0, &one,
                                                                    nullptr));
  probe.status("NULL context", clGetSupportedImageFormats(nullptr, 0, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &count));
}

DIFFERENTIAL_TEST(image_create_query, "clCreateImage creates every image type and clGetImageInfo describes it",
                  "[image]") {
  const Setup setup = make_setup(probe);
  Buffer backing = make_buffer(setup.context, CL_MEM_READ_WRITE, 64 * pixel);
  struct Case {
    const char* name;
    cl_image_desc desc;
  };
  cl_image_desc from_buffer = desc_of(CL_MEM_OBJECT_IMAGE1D_BUFFER, 64);
  from_buffer.buffer = backing;
  const Case cases[] = {
      {"1D", desc_of(CL_MEM_OBJECT_IMAGE1D, 64)},
      {"1D buffer", from_buffer},
      {"1D array", desc_of(CL_MEM_OBJECT_IMAGE1D_ARRAY, 32, 0, 0, 3)},
      {"2D", desc_of(CL_MEM_OBJECT_IMAGE2D, 17, 9)},
      {"2D array", desc_of(CL_MEM_OBJECT_IMAGE2D_ARRAY, 8, 4, 0, 5)},
      {"3D", desc_of(CL_MEM_OBJECT_IMAGE3D, 8, 4, 3)},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    Buffer image = create_image(probe, name, setup.context, CL_MEM_READ_WRITE, &rgba8, &c.desc);
    if (!image.get()) continue;
    cl_mem_object_type type = 0;
    REQUIRE(clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS);
    probe.value(name + ": type", type);
    cl_image_format format{};
    probe.status(name + ": format", clGetImageInfo(image, CL_IMAGE_FORMAT, sizeof format, &format, nullptr));
    CHECK(format.image_channel_order == CL_RGBA);
    for (auto [param, label] : {std::pair{CL_IMAGE_ELEMENT_SIZE, "element size"}, {CL_IMAGE_WIDTH, "width"},
                                {CL_IMAGE_HEIGHT, "height"}, {CL_IMAGE_DEPTH, "depth"},
                                {CL_IMAGE_ARRAY_SIZE, "array size"}}) {
      size_t value = 0;
      probe.status(name + ": " + label + " status", clGetImageInfo(image, param, sizeof value, &value, nullptr));
      probe.value(name + ": " + label, value);
    }
    cl_mem buffer = nullptr;
    probe.status(name + ": buffer", clGetImageInfo(image, CL_IMAGE_BUFFER, sizeof buffer, &buffer, nullptr));
    CHECK(buffer == (c.desc.image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER ? backing.get() : nullptr));
    cl_mem associated = nullptr;
    REQUIRE(clGetMemObjectInfo(image, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, nullptr) ==
            CL_SUCCESS);
    probe.value(name + ": associated is the buffer", associated == buffer);
  }
  // The 1.1 entry points.
  cl_int status = CL_SUCCESS;
  Buffer legacy2d(clCreateImage2D(setup.context, CL_MEM_READ_ONLY, &rgba8, 16, 8, 0, nullptr, &status));
  probe.status("clCreateImage2D", status);
  Buffer legacy3d(clCreateImage3D(setup.context, CL_MEM_READ_ONLY, &rgba8, 4, 4, 4, 0, 0, nullptr, &status));
  probe.status("clCreateImage3D", status);
  // An image is not a buffer, nor the other way round.
  size_t width = 0;
  // PoCL 3.1 describes a buffer as an image; the specification (and HiveCL) rejects it.
  const cl_int buffer_info = clGetImageInfo(backing, CL_IMAGE_WIDTH, sizeof width, &width, nullptr);
  if (probe.hivecl()) CHECK(buffer_info == CL_INVALID_MEM_OBJECT);
  probe.status("unknown image info", clGetImageInfo(legacy2d, 0x7FFF, sizeof width, &width, nullptr));
}

// An image made from a buffer takes the buffer's access, host access and host memory flags where
// it asks none, and what it asks must agree with them (CL_INVALID_VALUE); clGetMemObjectInfo
// reports the flags and host pointer it was made with. HiveCL's side alone: natively PoCL 3.1 and
// NVIDIA both depart from that, differently (PoCL reports the inherited flags and the buffer's host
// memory and accepts every conflict; NVIDIA reports CL_MEM_READ_WRITE and lets the host write an
// image of a buffer it may only read), and with this case's native side the API suite's process
// aborted in PoCL 3.1's clReleaseContext of a later case (docs/FINDINGS.md).
HIVECL_TEST(image_from_buffer_flags, "an image made from a buffer inherits its flags", "[image]") {
  const Setup setup = make_setup(probe);
  Bytes host = sample(64 * pixel, 2);
  Buffer buffer = make_buffer(setup.context, CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_USE_HOST_PTR,
                              host.size(), host.data());
  cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE1D_BUFFER, 64);
  desc.buffer = buffer;
  Buffer image = make_image(setup.context, 0, desc);
  CHECK(read_image(setup.queue, image, {0, 0, 0}, {64, 1, 1}) == host);
  cl_mem_flags flags = 1;
  REQUIRE(clGetMemObjectInfo(image, CL_MEM_FLAGS, sizeof flags, &flags, nullptr) == CL_SUCCESS);
  CHECK(flags == 0);
  void* host_ptr = &flags;
  REQUIRE(clGetMemObjectInfo(image, CL_MEM_HOST_PTR, sizeof host_ptr, &host_ptr, nullptr) == CL_SUCCESS);
  CHECK(host_ptr == nullptr);
  const std::array<size_t, 3> origin{0, 0, 0}, region{4, 1, 1};
  size_t row_pitch = 0;
  cl_int status = CL_SUCCESS;
  CHECK(clEnqueueMapImage(setup.queue, image, CL_TRUE, CL_MAP_WRITE, origin.data(), region.data(), &row_pitch,
                          nullptr, 0, nullptr, nullptr, &status) == nullptr);
  CHECK(status_name(status) == status_name(CL_INVALID_OPERATION));
  for (const cl_mem_flags conflicting : {CL_MEM_READ_WRITE, CL_MEM_HOST_WRITE_ONLY, CL_MEM_USE_HOST_PTR}) {
    Buffer refused(clCreateImage(setup.context, conflicting, &rgba8, &desc,
                                 conflicting == CL_MEM_USE_HOST_PTR ? host.data() : nullptr, &status));
    INFO("flags " << conflicting);
    CHECK(status_name(status) == status_name(CL_INVALID_VALUE));
  }
}

DIFFERENTIAL_TEST(image_create_errors, "clCreateImage rejects bad formats, descriptors and sizes", "[image]") {
  const Setup setup = make_setup(probe);
  Bytes host = sample(64 * 64 * pixel, 1);
  const cl_image_desc good = desc_of(CL_MEM_OBJECT_IMAGE2D, 16, 16);
  const cl_image_format bad_order{0x7FFF, CL_UNORM_INT8};
  const cl_image_format bad_type{CL_RGBA, 0x7FFF};
  create_image(probe, "NULL format", setup.context, 0, nullptr, &good);
  // PoCL 3.1 answers CL_INVALID_OPERATION for formats it does not know, and for sizes above its limits.
  create_image_per_spec(probe, "unknown order", CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, setup.context, 0, &bad_order, &good);
  create_image_per_spec(probe, "unknown data type", CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, setup.context, 0, &bad_type,
                        &good);
  create_image(probe, "NULL descriptor", setup.context, 0, &rgba8, nullptr);
  const cl_image_desc buffer_type = desc_of(CL_MEM_OBJECT_BUFFER, 16, 16);
  create_image_per_spec(probe, "buffer type", CL_INVALID_IMAGE_DESCRIPTOR, setup.context, 0, &rgba8, &buffer_type);
  size_t max_width = 0;
  REQUIRE(clGetDeviceInfo(probe.device(), CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof max_width, &max_width, nullptr) ==
          CL_SUCCESS);
  const cl_image_desc too_wide = desc_of(CL_MEM_OBJECT_IMAGE2D, max_width + 1, 4);
  create_image_per_spec(probe, "too wide", CL_INVALID_IMAGE_SIZE, setup.context, 0, &rgba8, &too_wide);
  // PoCL 3.1 accepts pitches without host memory and pitches too small for a row.
  cl_image_desc pitch_without_host = good;
  pitch_without_host.image_row_pitch = 16 * pixel;
  create_image_per_spec(probe, "row pitch without host ptr", CL_INVALID_IMAGE_DESCRIPTOR, setup.context, 0, &rgba8,
                        &pitch_without_host);
  cl_image_desc small_pitch = good;
  small_pitch.image_row_pitch = 8 * pixel;
  create_image_per_spec(probe, "row pitch too small", CL_INVALID_IMAGE_DESCRIPTOR, setup.context,
                        CL_MEM_COPY_HOST_PTR, &rgba8, &small_pitch, host.data());
  cl_image_desc odd_pitch = good;
  odd_pitch.image_row_pitch = 16 * pixel + 1;
  create_image_per_spec(probe, "row pitch not a multiple of the pixel", CL_INVALID_IMAGE_DESCRIPTOR, setup.context,
                        CL_MEM_COPY_HOST_PTR, &rgba8, &odd_pitch, host.data());
  create_image(probe, "copy without host ptr", setup.context, CL_MEM_COPY_HOST_PTR, &rgba8, &good);
  create_image(probe, "host ptr without copy", setup.context, 0, &rgba8, &good, host.data());
  // PoCL 3.1 aborts the process on mip levels: HiveCL alone is asked (it never forwards them).
  if (probe.hivecl()) {
    cl_image_desc mipmapped = good;
    mipmapped.num_mip_levels = 2;
    cl_int status = CL_SUCCESS;
    CHECK(clCreateImage(setup.context, 0, &rgba8, &mipmapped, nullptr, &status) == nullptr);
    CHECK(status == CL_INVALID_IMAGE_DESCRIPTOR);
  }
  create_image(probe, "NULL context", nullptr, 0, &rgba8, &good);
}

DIFFERENTIAL_TEST(image_round_trip, "image writes and reads keep the data, with and without pitches", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 23, height = 11;
  const cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE2D, width, height);
  Buffer image = make_image(setup.context, CL_MEM_READ_WRITE, desc);
  const Bytes picture = sample(width * height * pixel, 2);
  const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, 1};
  probe.status("packed write", clEnqueueWriteImage(setup.queue, image, CL_TRUE, zero.data(), whole.data(), 0, 0,
                                                   picture.data(), 0, nullptr, nullptr));
  record_data(probe, "packed read", read_image(setup.queue, image, zero, whole), picture);
  // A sub-region written from memory with a wider row pitch, read back into a wider layout too.
  constexpr size_t pitch = 40 * pixel;
  const std::array<size_t, 3> origin{5, 3, 0}, region{9, 6, 1};
  Bytes padded = sample(pitch * region[1], 3);
  probe.status("pitched write", clEnqueueWriteImage(setup.queue, image, CL_TRUE, origin.data(), region.data(), pitch,
                                                    0, padded.data(), 0, nullptr, nullptr));
  Bytes expected_region;
  for (size_t y = 0; y < region[1]; ++y)
    expected_region.insert(expected_region.end(), padded.begin() + static_cast<ptrdiff_t>(y * pitch),
                           padded.begin() + static_cast<ptrdiff_t>(y * pitch + region[0] * pixel));
  record_data(probe, "region read", read_image(setup.queue, image, origin, region), expected_region);
  Bytes wide(pitch * region[1], 0xAB);
  Event done;
  probe.status("pitched non-blocking read", clEnqueueReadImage(setup.queue, image, CL_FALSE, origin.data(),
                                                               region.data(), pitch, 0, wide.data(), 0, nullptr,
                                                               done.out()));
  const cl_event events[] = {done.get()};
  probe.status("wait", clWaitForEvents(1, events));
  Bytes unpadded;
  for (size_t y = 0; y < region[1]; ++y) {
    unpadded.insert(unpadded.end(), wide.begin() + static_cast<ptrdiff_t>(y * pitch),
                    wide.begin() + static_cast<ptrdiff_t>(y * pitch + region[0] * pixel));
    CHECK(wide[y * pitch + region[0] * pixel] == 0xAB);  // the padding stays untouched
  }
  record_data(probe, "pitched read", unpadded, expected_region);
  cl_command_type type = 0;
  REQUIRE(clGetEventInfo(done, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS);
  probe.value("read event type", type);
}

// Rows wider than a staging slot of 4 KiB (api-small-pieces runs this with such slots): a proxy
// moves them in pieces of a row.
DIFFERENTIAL_TEST(image_wide_rows, "images with rows of several kilobytes keep their data", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 1500, height = 5;
  Buffer image = make_image(setup.context, CL_MEM_READ_WRITE, desc_of(CL_MEM_OBJECT_IMAGE2D, width, height));
  const Bytes picture = sample(width * height * pixel, 5);
  const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, 1};
  probe.status("write", clEnqueueWriteImage(setup.queue, image, CL_TRUE, zero.data(), whole.data(), 0, 0,
                                            picture.data(), 0, nullptr, nullptr));
  record_data(probe, "read", read_image(setup.queue, image, zero, whole), picture);
  const std::array<size_t, 3> origin{7, 1, 0}, region{1400, 3, 1};
  record_data(probe, "region read", read_image(setup.queue, image, origin, region),
              crop(picture, width, height, origin, region));
}

DIFFERENTIAL_TEST(image_3d_and_host_data, "3D images and images made from host data, with slice pitches", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 6, height = 5, depth = 4;
  constexpr size_t row_pitch = 8 * pixel, slice_pitch = row_pitch * 7;
  const Bytes picture = sample(width * height * depth * pixel, 4);
  Bytes host(slice_pitch * depth, 0);
  for (size_t z = 0; z < depth; ++z)
    for (size_t y = 0; y < height; ++y)
      std::memcpy(host.data() + z * slice_pitch + y * row_pitch, picture.data() + ((z * height + y) * width) * pixel,
                  width * pixel);
  cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE3D, width, height, depth);
  desc.image_row_pitch = row_pitch;
  desc.image_slice_pitch = slice_pitch;
  Buffer copied = create_image(probe, "copy host ptr", setup.context, CL_MEM_COPY_HOST_PTR, &rgba8, &desc, host.data());
  REQUIRE(copied.get());
  const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, depth};
  record_data(probe, "copied contents", read_image(setup.queue, copied, zero, whole), picture);
  Buffer used = create_image(probe, "use host ptr", setup.context, CL_MEM_USE_HOST_PTR, &rgba8, &desc, host.data());
  REQUIRE(used.get());
  record_data(probe, "used contents", read_image(setup.queue, used, zero, whole), picture);
  for (const auto& [image, label] : {std::pair{copied.get(), "copied"}, {used.get(), "used"}}) {
    size_t pitches[2] = {};
    REQUIRE(clGetImageInfo(image, CL_IMAGE_ROW_PITCH, sizeof pitches[0], &pitches[0], nullptr) == CL_SUCCESS);
    REQUIRE(clGetImageInfo(image, CL_IMAGE_SLICE_PITCH, sizeof pitches[1], &pitches[1], nullptr) == CL_SUCCESS);
    probe.value(std::string(label) + ": pitches", std::to_string(pitches[0]) + " " + std::to_string(pitches[1]));
  }
  const std::array<size_t, 3> origin{1, 2, 1}, region{4, 2, 3};
  record_data(probe, "3D region", read_image(setup.queue, copied, origin, region),
              crop(picture, width, height, origin, region));
}

DIFFERENTIAL_TEST(image_copy_fill, "clEnqueueCopyImage and clEnqueueFillImage", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 16, height = 8;
  Bytes picture = sample(width * height * pixel, 5);
  const cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE2D, width, height);
  Buffer source = make_image(setup.context, CL_MEM_COPY_HOST_PTR, desc, picture.data());
  Buffer destination = make_image(setup.context, CL_MEM_READ_WRITE, desc);
  const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, 1};
  probe.status("copy", clEnqueueCopyImage(setup.queue, source, destination, zero.data(), zero.data(), whole.data(), 0,
                                          nullptr, nullptr));
  record_data(probe, "copied", read_image(setup.queue, destination, zero, whole), picture);
  const cl_uint4 color{{10, 20, 30, 40}};
  const cl_float4 unit_color{{10 / 255.0f, 20 / 255.0f, 30 / 255.0f, 40 / 255.0f}};
  const std::array<size_t, 3> origin{2, 1, 0}, region{5, 3, 1};
  probe.status("fill", clEnqueueFillImage(setup.queue, destination, &unit_color, origin.data(), region.data(), 0,
                                          nullptr, nullptr));
  Bytes filled;
  for (size_t i = 0; i < region[0] * region[1]; ++i)
    filled.insert(filled.end(), {static_cast<unsigned char>(color.s[0]), static_cast<unsigned char>(color.s[1]),
                                 static_cast<unsigned char>(color.s[2]), static_cast<unsigned char>(color.s[3])});
  record_data(probe, "filled", read_image(setup.queue, destination, origin, region), filled);
  const std::array<size_t, 3> outside{width, 1, 1};
  probe.status("copy out of range", clEnqueueCopyImage(setup.queue, source, destination, origin.data(), zero.data(),
                                                       outside.data(), 0, nullptr, nullptr));
  probe.status("fill without color", clEnqueueFillImage(setup.queue, destination, nullptr, origin.data(),
                                                        region.data(), 0, nullptr, nullptr));
  Buffer buffer = make_buffer(setup.context, CL_MEM_READ_WRITE, 256);
  probe.status("copy from a buffer", clEnqueueCopyImage(setup.queue, buffer, destination, zero.data(), zero.data(),
                                                        region.data(), 0, nullptr, nullptr));
  probe.status("finish", clFinish(setup.queue));
}

// A fill of a 3D image waiting for a user event that another thread sets (NVIDIA's own
// clEnqueueFillImage of a 3D image returns only then), a write after it in its queue, and the
// regions a fill refuses.
DIFFERENTIAL_TEST(image_3d_fill_after_event, "clEnqueueFillImage of a 3D image held by a user event", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 8, height = 4, depth = 3;
  Bytes picture = sample(width * height * depth * pixel, 7);
  const cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE3D, width, height, depth);
  Buffer image = make_image(setup.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, desc, picture.data());
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  cl_int opened = CL_SUCCESS;
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    opened = clSetUserEventStatus(gate.get(), CL_COMPLETE);
  });
  const cl_float4 unit_color{{10 / 255.0f, 20 / 255.0f, 30 / 255.0f, 40 / 255.0f}};
  const std::array<size_t, 3> origin{1, 1, 1}, region{6, 2, 2}, pixel_origin{2, 1, 2}, one{1, 1, 1};
  cl_event gate_event = gate.get(), filled_event = nullptr;
  probe.status("fill", clEnqueueFillImage(setup.queue, image, &unit_color, origin.data(), region.data(), 1, &gate_event,
                                          &filled_event));
  Event filled(filled_event);
  const unsigned char written[pixel] = {1, 2, 3, 4};
  probe.status("write after it", clEnqueueWriteImage(setup.queue, image, CL_FALSE, pixel_origin.data(), one.data(), 0,
                                                     0, written, 0, nullptr, nullptr));
  opener.join();
  probe.status("set the user event", opened);
  probe.status("wait for the fill", clWaitForEvents(1, &filled_event));
  for (size_t z = origin[2]; z < origin[2] + region[2]; ++z)
    for (size_t y = origin[1]; y < origin[1] + region[1]; ++y)
      for (size_t x = origin[0]; x < origin[0] + region[0]; ++x)
        std::memcpy(&picture[((z * height + y) * width + x) * pixel], std::array<unsigned char, 4>{10, 20, 30, 40}.data(),
                    pixel);
  std::memcpy(&picture[((pixel_origin[2] * height + pixel_origin[1]) * width + pixel_origin[0]) * pixel], written, pixel);
  record_data(probe, "filled, then written", read_image(setup.queue, image, {0, 0, 0}, {width, height, depth}), picture);
  const std::array<size_t, 3> past_edge{1, 1, depth}, empty{6, 0, 2};
  probe.status("fill past the last slice", clEnqueueFillImage(setup.queue, image, &unit_color, origin.data(),
                                                              past_edge.data(), 0, nullptr, nullptr));
  // PoCL 3.1 accepts an empty region.
  expect_on_hivecl(probe, "fill of an empty region",
                   clEnqueueFillImage(setup.queue, image, &unit_color, origin.data(), empty.data(), 0, nullptr, nullptr),
                   CL_INVALID_VALUE);
  probe.status("finish", clFinish(setup.queue));
}

DIFFERENTIAL_TEST(image_buffer_copies, "clEnqueueCopyImageToBuffer and clEnqueueCopyBufferToImage", "[image]") {
  const Setup setup = make_setup(probe);
  constexpr size_t width = 12, height = 7;
  Bytes picture = sample(width * height * pixel, 6);
  const cl_image_desc desc = desc_of(CL_MEM_OBJECT_IMAGE2D, width, height);
  Buffer image = make_image(setup.context, CL_MEM_COPY_HOST_PTR, desc, picture.data());
  const std::array<size_t, 3> origin{3, 2, 0}, region{6, 4, 1};
  constexpr size_t offset = 16;
  Buffer buffer = make_buffer(setup.context, CL_MEM_READ_WRITE, offset + region[0] * region[1] * pixel);
  probe.status("image to buffer", clEnqueueCopyImageToBuffer(setup.queue, image, buffer, origin.data(), region.data(),
                                                             offset, 0, nullptr, nullptr));
  Bytes copied(region[0] * region[1] * pixel);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, offset, copied.size(), copied.data(), 0, nullptr,
                              nullptr) == CL_SUCCESS);
  const Bytes expected = crop(picture, width, height, origin, region);
  record_data(probe, "in the buffer", copied, expected);
  Buffer back = make_image(setup.context, CL_MEM_READ_WRITE, desc_of(CL_MEM_OBJECT_IMAGE2D, region[0], region[1]));
  const std::array<size_t, 3> zero{0, 0, 0};
  probe.status("buffer to image", clEnqueueCopyBufferToImage(setup.queue, buffer, back, offset, zero.data(),
                                                             region.data(), 0, nullptr, nullptr));
  record_data(probe, "back in an image", read_image(setup.queue, back, zero, region), expected);
  probe.status("buffer as the image", clEnqueueCopyImageToBuffer(setup.queue, buffer, buffer, origin.data(),
                                                                 region.data(), 0, 0, nullptr, nullptr));
  probe.status("image as the buffer", clEnqueueCopyBufferToImage(setup.queue, image, back, 0, zero.data(),
                                                                 region.data(), 0, nullptr, nullptr));
  probe.status("buffer too small", clEnqueueCopyImageToBuffer(setup.queue, image, buffer, zero.data(), region.data(),
                                                              offset + 8, 0, nullptr, nullptr));
  probe.status("finish", clFinish(setup.queue));
}

// A 1D array too: its images are rows here, one slice pitch apart (runtimes differ on which
// pitch a 1D array's transfers take: HiveCL in-process must give the native call both). Small
// and of 75 KiB: through a proxy of the node, mappings of the larger lie in shared memory.
DIFFERENTIAL_TEST(image_map, "clEnqueueMapImage maps a region, and unmapping writes it back", "[image]") {
  const Setup setup = make_setup(probe);
  struct Case {
    size_t width, height;
    std::array<size_t, 3> origin, region;
  };
  for (const Case& size : {Case{10, 6, {2, 1, 0}, {5, 4, 1}}, Case{160, 120, {7, 3, 0}, {100, 90, 1}}}) {
    const size_t width = size.width, height = size.height;
    const std::array<size_t, 3>& origin = size.origin;
    const std::array<size_t, 3>& region = size.region;
    for (cl_mem_object_type type : {cl_mem_object_type{CL_MEM_OBJECT_IMAGE2D},
                                    cl_mem_object_type{CL_MEM_OBJECT_IMAGE1D_ARRAY}}) {
      const Bytes picture = sample(width * height * pixel, 7);
      const cl_image_desc desc = type == CL_MEM_OBJECT_IMAGE2D ? desc_of(type, width, height)
                                                               : desc_of(type, width, 0, 0, height);
      for (cl_mem_flags flags : {cl_mem_flags{CL_MEM_COPY_HOST_PTR}, cl_mem_flags{CL_MEM_USE_HOST_PTR}}) {
        const std::string what = std::to_string(width) + " x " + std::to_string(height) +
                                 (type == CL_MEM_OBJECT_IMAGE2D ? " 2D, " : " 1D array, ") +
                                 (flags == CL_MEM_USE_HOST_PTR ? "use host ptr" : "copy host ptr");
        Bytes host = picture;
        Buffer image = make_image(setup.context, flags, desc, host.data());
        size_t row_pitch = 0, slice_pitch = 1;
        cl_int status = CL_SUCCESS;
        auto* mapped = static_cast<unsigned char*>(clEnqueueMapImage(setup.queue, image, CL_TRUE,
                                                                     CL_MAP_READ | CL_MAP_WRITE, origin.data(),
                                                                     region.data(), &row_pitch, &slice_pitch, 0,
                                                                     nullptr, nullptr, &status));
        probe.status(what + ": map", status);
        REQUIRE(mapped);
        CHECK(row_pitch >= region[0] * pixel);
        const size_t step = type == CL_MEM_OBJECT_IMAGE2D ? row_pitch : slice_pitch;
        if (flags == CL_MEM_USE_HOST_PTR) CHECK(mapped == host.data() + (origin[1] * width + origin[0]) * pixel);
        Bytes seen;
        for (size_t y = 0; y < region[1]; ++y)
          seen.insert(seen.end(), mapped + y * step, mapped + y * step + region[0] * pixel);
        record_data(probe, what + ": mapped data", seen, crop(picture, width, height, origin, region));
        cl_uint count = 0;
        REQUIRE(clGetMemObjectInfo(image, CL_MEM_MAP_COUNT, sizeof count, &count, nullptr) == CL_SUCCESS);
        probe.value(what + ": map count", count);
        for (size_t y = 0; y < region[1]; ++y)
          std::memset(mapped + y * step, static_cast<int>(0x40 + y), region[0] * pixel);
        probe.status(what + ": unmap", clEnqueueUnmapMemObject(setup.queue, image, mapped, 0, nullptr, nullptr));
        Bytes expected = picture;
        for (size_t y = 0; y < region[1]; ++y)
          std::memset(expected.data() + ((origin[1] + y) * width + origin[0]) * pixel, static_cast<int>(0x40 + y),
                      region[0] * pixel);
        const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, 1};
        record_data(probe, what + ": after unmap", read_image(setup.queue, image, zero, whole), expected);
        // Mapped again: the region as written back.
        mapped = static_cast<unsigned char*>(clEnqueueMapImage(setup.queue, image, CL_TRUE, CL_MAP_READ, origin.data(),
                                                               region.data(), &row_pitch, &slice_pitch, 0, nullptr,
                                                               nullptr, &status));
        probe.status(what + ": map again", status);
        REQUIRE(mapped);
        seen.clear();
        for (size_t y = 0; y < region[1]; ++y)
          seen.insert(seen.end(), mapped + y * step, mapped + y * step + region[0] * pixel);
        record_data(probe, what + ": mapped again", seen, crop(expected, width, height, origin, region));
        probe.status(what + ": unmap again", clEnqueueUnmapMemObject(setup.queue, image, mapped, 0, nullptr, nullptr));
        // NVIDIA's driver maps without a row pitch to report (docs/FINDINGS.md).
        expect_on_hivecl(probe, what + ": no row pitch", [&] {
          clEnqueueMapImage(setup.queue, image, CL_TRUE, CL_MAP_READ, origin.data(), region.data(), nullptr, nullptr, 0,
                            nullptr, nullptr, &status);
          return status;
        }(), CL_INVALID_VALUE);
      }
    }
  }
}

DIFFERENTIAL_TEST(image_transfer_errors, "image transfers reject buffers, bad regions and pointers", "[image]") {
  const Setup setup = make_setup(probe);
  Buffer image = make_image(setup.context, CL_MEM_READ_WRITE, desc_of(CL_MEM_OBJECT_IMAGE2D, 8, 8));
  Buffer buffer = make_buffer(setup.context, CL_MEM_READ_WRITE, 256);
  Bytes host(8 * 8 * pixel);
  const std::array<size_t, 3> zero{0, 0, 0}, whole{8, 8, 1}, too_big{9, 8, 1}, flat{8, 0, 1}, deep{8, 8, 2},
      shifted{1, 0, 0};
  const auto read = [&](cl_mem mem, const size_t* origin, const size_t* region, void* ptr, size_t row_pitch = 0) {
    return clEnqueueReadImage(setup.queue, mem, CL_TRUE, origin, region, row_pitch, 0, ptr, 0, nullptr, nullptr);
  };
  probe.status("read a buffer", read(buffer, zero.data(), whole.data(), host.data()));
  probe.status("read NULL", read(nullptr, zero.data(), whole.data(), host.data()));
  probe.status("region too big", read(image, zero.data(), too_big.data(), host.data()));
  probe.status("origin pushes out", read(image, shifted.data(), whole.data(), host.data()));
  // PoCL 3.1 accepts an empty region, a row pitch too small for a row, and buffer reads of images.
  expect_on_hivecl(probe, "empty region", read(image, zero.data(), flat.data(), host.data()), CL_INVALID_VALUE);
  probe.status("depth for a 2D image", read(image, zero.data(), deep.data(), host.data()));
  probe.status("NULL region", read(image, zero.data(), nullptr, host.data()));
  probe.status("NULL pointer", read(image, zero.data(), whole.data(), nullptr));
  expect_on_hivecl(probe, "row pitch too small", read(image, zero.data(), whole.data(), host.data(), 4),
                   CL_INVALID_VALUE);
  probe.status("write a buffer", clEnqueueWriteImage(setup.queue, buffer, CL_TRUE, zero.data(), whole.data(), 0, 0,
                                                     host.data(), 0, nullptr, nullptr));
  expect_on_hivecl(probe, "read buffer from an image",
                   clEnqueueReadBuffer(setup.queue, image, CL_TRUE, 0, 16, host.data(), 0, nullptr, nullptr),
                   CL_INVALID_MEM_OBJECT);
  Buffer host_no_access = make_image(setup.context, CL_MEM_HOST_NO_ACCESS, desc_of(CL_MEM_OBJECT_IMAGE2D, 8, 8));
  probe.status("read with no host access", read(host_no_access, zero.data(), whole.data(), host.data()));
}

DIFFERENTIAL_TEST(samplers, "clCreateSampler, clCreateSamplerWithProperties and clGetSamplerInfo", "[image]") {
  const Setup setup = make_setup(probe);
  cl_int status = CL_SUCCESS;
  Sampler plain(clCreateSampler(setup.context, CL_TRUE, CL_ADDRESS_REPEAT, CL_FILTER_LINEAR, &status));
  probe.status("create", status);
  REQUIRE(plain.get());
  cl_bool normalized = CL_FALSE;
  cl_addressing_mode addressing = 0;
  cl_filter_mode filter = 0;
  cl_uint refs = 0;
  cl_context context = nullptr;
  probe.status("normalized", clGetSamplerInfo(plain, CL_SAMPLER_NORMALIZED_COORDS, sizeof normalized, &normalized, nullptr));
  probe.status("addressing", clGetSamplerInfo(plain, CL_SAMPLER_ADDRESSING_MODE, sizeof addressing, &addressing, nullptr));
  probe.status("filter", clGetSamplerInfo(plain, CL_SAMPLER_FILTER_MODE, sizeof filter, &filter, nullptr));
  probe.status("context", clGetSamplerInfo(plain, CL_SAMPLER_CONTEXT, sizeof context, &context, nullptr));
  probe.value("settings", std::to_string(normalized) + " " + std::to_string(addressing) + " " + std::to_string(filter));
  CHECK(context == setup.context.get());
  probe.status("retain", clRetainSampler(plain));
  probe.status("refs", clGetSamplerInfo(plain, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, nullptr));
  probe.value("reference count", refs);
  probe.status("release", clReleaseSampler(plain));
  probe.status("unknown info", clGetSamplerInfo(plain, 0x7FFF, sizeof refs, &refs, nullptr));
  probe.status("too small", clGetSamplerInfo(plain, CL_SAMPLER_FILTER_MODE, 1, &filter, nullptr));
  const cl_sampler_properties properties[] = {CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE, CL_SAMPLER_FILTER_MODE,
                                              CL_FILTER_NEAREST, 0};
  Sampler listed(clCreateSamplerWithProperties(setup.context, properties, &status));
  probe.status("with properties", status);
  REQUIRE(listed.get());
  probe.status("listed addressing", clGetSamplerInfo(listed, CL_SAMPLER_ADDRESSING_MODE, sizeof addressing,
                                                      &addressing, nullptr));
  probe.value("default addressing", addressing);
  size_t size = 0;
  probe.status("properties size", clGetSamplerInfo(listed, CL_SAMPLER_PROPERTIES, 0, nullptr, &size));
  probe.value("properties bytes", size);
  // PoCL 3.1 refuses a NULL list (the specification's defaults) and accepts unknown modes.
  Sampler defaults(clCreateSamplerWithProperties(setup.context, nullptr, &status));
  expect_on_hivecl(probe, "NULL properties", status, CL_SUCCESS);
  const cl_sampler_properties unknown[] = {0x7FFF, 1, 0};
  Sampler bad(clCreateSamplerWithProperties(setup.context, unknown, &status));
  probe.status("unknown property", status);
  Sampler bad_mode(clCreateSampler(setup.context, CL_TRUE, 0x7FFF, CL_FILTER_LINEAR, &status));
  expect_on_hivecl(probe, "unknown addressing mode", status, CL_INVALID_VALUE);
  Sampler bad_filter(clCreateSampler(setup.context, CL_TRUE, CL_ADDRESS_CLAMP, 0x7FFF, &status));
  expect_on_hivecl(probe, "unknown filter mode", status, CL_INVALID_VALUE);
  Sampler no_context(clCreateSampler(nullptr, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_LINEAR, &status));
  probe.status("NULL context", status);
  probe.status("retain NULL", clRetainSampler(nullptr));
  probe.status("info of NULL", clGetSamplerInfo(nullptr, CL_SAMPLER_FILTER_MODE, sizeof filter, &filter, nullptr));
}

namespace {

// Each work-item samples the image at its pixel and at a shifted, clamped pixel.
const char* const sampling_source = R"CLC(
__kernel void sample_image(__read_only image2d_t image, sampler_t sampler, __global uint4* out, int shift) {
  const int x = get_global_id(0), y = get_global_id(1);
  const int index = y * get_global_size(0) + x;
  out[2 * index] = read_imageui(image, sampler, (int2)(x, y));
  out[2 * index + 1] = read_imageui(image, sampler, (int2)(x + shift, y - shift));
}

__kernel void write_image(__write_only image2d_t image, uint base) {
  const int x = get_global_id(0), y = get_global_id(1);
  write_imageui(image, (int2)(x, y), (uint4)(base + x, base + y, x * y, 7));
}
)CLC";

}  // namespace

DIFFERENTIAL_TEST(image_kernel, "a kernel samples an image with a sampler and another writes one", "[image]") {
  const Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, sampling_source);
  constexpr size_t width = 9, height = 5;
  const cl_image_format rgba32ui{CL_RGBA, CL_UNSIGNED_INT32};
  std::vector<cl_uint> pixels(width * height * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<cl_uint>(i * 3 + 1);
  Buffer image = make_image(setup.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            desc_of(CL_MEM_OBJECT_IMAGE2D, width, height), pixels.data(), rgba32ui);
  cl_int status = CL_SUCCESS;
  Sampler sampler(clCreateSampler(setup.context, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &status));
  REQUIRE(status == CL_SUCCESS);
  Buffer out = make_buffer(setup.context, CL_MEM_WRITE_ONLY, width * height * 2 * sizeof(cl_uint4));
  Kernel kernel(clCreateKernel(program, "sample_image", &status));
  REQUIRE(status == CL_SUCCESS);
  const cl_mem image_handle = image.get(), out_handle = out.get();
  const cl_sampler sampler_handle = sampler.get();
  const cl_int shift = 3;
  probe.status("image arg", clSetKernelArg(kernel, 0, sizeof image_handle, &image_handle));
  probe.status("sampler arg", clSetKernelArg(kernel, 1, sizeof sampler_handle, &sampler_handle));
  probe.status("out arg", clSetKernelArg(kernel, 2, sizeof out_handle, &out_handle));
  probe.status("shift arg", clSetKernelArg(kernel, 3, sizeof shift, &shift));
  const size_t global[] = {width, height};
  probe.status("launch", clEnqueueNDRangeKernel(setup.queue, kernel, 2, nullptr, global, nullptr, 0, nullptr, nullptr));
  std::vector<cl_uint> sampled(width * height * 8);
  REQUIRE(clEnqueueReadBuffer(setup.queue, out, CL_TRUE, 0, sampled.size() * sizeof(cl_uint), sampled.data(), 0,
                              nullptr, nullptr) == CL_SUCCESS);
  probe.record("sampled", checksum(sampled.data(), sampled.size() * sizeof(cl_uint)));
  CHECK(sampled[0] == pixels[0]);
  // Pixel (0, 0) shifted to (3, -3): clamped to (3, 0).
  CHECK(sampled[4] == pixels[3 * 4]);
  // Wrong objects for image and sampler arguments.
  const cl_mem buffer_handle = out.get();
  // PoCL 3.1 takes a buffer for an image and an image for a sampler.
  expect_on_hivecl(probe, "buffer as image", clSetKernelArg(kernel, 0, sizeof buffer_handle, &buffer_handle),
                   CL_INVALID_MEM_OBJECT);
  probe.status("image arg size", clSetKernelArg(kernel, 0, 4, &image_handle));
  const cl_sampler not_a_sampler = reinterpret_cast<cl_sampler>(image_handle);
  expect_on_hivecl(probe, "image as sampler", clSetKernelArg(kernel, 1, sizeof not_a_sampler, &not_a_sampler),
                   CL_INVALID_SAMPLER);
  probe.status("sampler arg size", clSetKernelArg(kernel, 1, 4, &sampler_handle));
  // A kernel writes an image, read back on the host.
  Buffer target = make_image(setup.context, CL_MEM_WRITE_ONLY, desc_of(CL_MEM_OBJECT_IMAGE2D, width, height),
                             nullptr, rgba32ui);
  Kernel writer(clCreateKernel(program, "write_image", &status));
  REQUIRE(status == CL_SUCCESS);
  const cl_mem target_handle = target.get();
  const cl_uint base = 100;
  probe.status("target arg", clSetKernelArg(writer, 0, sizeof target_handle, &target_handle));
  probe.status("base arg", clSetKernelArg(writer, 1, sizeof base, &base));
  probe.status("write launch", clEnqueueNDRangeKernel(setup.queue, writer, 2, nullptr, global, nullptr, 0, nullptr,
                                                      nullptr));
  std::vector<cl_uint> written(width * height * 4);
  const std::array<size_t, 3> zero{0, 0, 0}, whole{width, height, 1};
  probe.status("read written", clEnqueueReadImage(setup.queue, target, CL_TRUE, zero.data(), whole.data(), 0, 0,
                                                  written.data(), 0, nullptr, nullptr));
  probe.record("written", checksum(written.data(), written.size() * sizeof(cl_uint)));
  CHECK(written[4 * (2 * width + 3)] == base + 3);
}
