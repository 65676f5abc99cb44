// Transfer bandwidth, natively and through HiveCL, side by side (side_by_side.hpp), as VOCL
// measured it: a window of non-blocking writes (or reads) of one size, then clFinish; and
// single blocking transfers; and a stream of writes each read back after its event (SHOC Triad's
// pattern). Host memory ordinary (malloc; the same memory for both sides, as in one program, so
// that how the kernel backs each side's own pages does not weigh on the ratio) and page-locked
// (a mapped CL_MEM_ALLOC_HOST_PTR buffer of the side's own context). Each case name ends with
// HiveCL's data path ([memory] or [mpi], from CL_DEVICE_DATA_PATH_HIVECL) and the transfer
// settings given in the environment (HIVECL_STAGING_SLOTS=1: no pipeline). At the largest size
// also: making a buffer and an image from host data, rectangular transfers of half of every
// host row (both kinds of host memory), a map and unmap of the whole buffer (and of a new one),
// and (where the device has images) transfers of a whole 2D image (both kinds) and a map and
// unmap of it (and of a new one); and (where the device shares coarse-grained SVM buffers) a
// map and unmap of an SVM allocation and blocking copies into and out of it.
//   HIVECL_BENCH_MIN_BYTES / HIVECL_BENCH_MAX_BYTES  sizes, powers of 4 apart (64 KiB .. 16 MiB)
//   HIVECL_BENCH_WINDOW         transfers per window (32); fewer where size * window > 1 GiB
//   HIVECL_BENCH_OWN_HOST_MEMORY=1  each side its own ordinary memory, to tell whether sharing it
//                               weighs on NVIDIA's two contexts (PERFORMANCE.md, fifty-fifth session)
#include <CL/cl.h>
#include <CL/cl_hivecl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

// One side's device buffer and two host buffers of `bytes`: malloc'd (both sides') and page-locked.
struct Fixture {
  cl_mem device = nullptr;
  cl_mem pinned_buffer = nullptr;
  void* pinned = nullptr;
  char* ordinary = nullptr;
  cl_mem image = nullptr;  // RGBA8, rows of image_row_bytes; null without image support
  void* svm = nullptr;     // an SVM allocation; null without coarse-grained SVM buffers
};

constexpr size_t image_row_bytes = 4096;
constexpr size_t rect_row_bytes = 4096;  // host rows; a rectangle moves the first half of each

cl_mem make_image(const Side& side, size_t bytes) {
  cl_bool images = CL_FALSE;
  clGetDeviceInfo(side.device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr);
  size_t max_height = 0;
  clGetDeviceInfo(side.device, CL_DEVICE_IMAGE2D_MAX_HEIGHT, sizeof max_height, &max_height, nullptr);
  if (!images || bytes / image_row_bytes > max_height) return nullptr;
  const cl_image_format format{CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = image_row_bytes / 4;
  desc.image_height = bytes / image_row_bytes;
  cl_int status = CL_SUCCESS;
  const cl_mem image = clCreateImage(side.context, CL_MEM_READ_WRITE, &format, &desc, nullptr, &status);
  check(status, "clCreateImage");
  return image;
}

Fixture make_fixture(const Side& side, size_t bytes, char* ordinary) {
  Fixture fixture;
  fixture.ordinary = ordinary;
  cl_int status = CL_SUCCESS;
  fixture.device = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  fixture.pinned_buffer = clCreateBuffer(side.context, CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &status);
  check(status, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
  fixture.pinned = clEnqueueMapBuffer(side.queue, fixture.pinned_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      bytes, 0, nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer");
  std::memset(fixture.pinned, 1, bytes);
  check(clEnqueueWriteBuffer(side.queue, fixture.device, CL_TRUE, 0, bytes, fixture.ordinary, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
  fixture.image = make_image(side, bytes);
  cl_device_svm_capabilities svm = 0;
  clGetDeviceInfo(side.device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr);
  if (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) fixture.svm = clSVMAlloc(side.context, CL_MEM_READ_WRITE, bytes, 0);
  return fixture;
}

std::string size_name(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

// "[memory]" or "[mpi]", with the transfer settings the environment gives client and proxy.
std::string path_label(const Side& hivecl) {
  char path[32] = {};
  clGetDeviceInfo(hivecl.device, CL_DEVICE_DATA_PATH_HIVECL, sizeof path, path, nullptr);
  std::string label = std::string("[") + path;
  for (const char* setting : {"HIVECL_STAGING_SLOTS", "HIVECL_CHUNK_BYTES", "HIVECL_COPY_THREADS"})
    if (const char* value = std::getenv(setting)) label += std::string(" ") + (setting + 7) + "=" + value;
  return label + "]";
}

// Host memory of `fixture`: page-locked (a mapped CL_MEM_ALLOC_HOST_PTR buffer) or ordinary.
void* host_memory(const Fixture& fixture, bool pinned) {
  return pinned ? fixture.pinned : fixture.ordinary;
}

// GB/s of `count` rounds of a non-blocking write of half of `bytes` from page-locked memory and
// a non-blocking read of it back into the other half that waits for the write's event, then
// clFinish: SHOC Triad's stream of commands waiting for each other through events.
double write_read_stream_rate(const Side& side, const Fixture& fixture, size_t bytes, size_t count) {
  const size_t half = bytes / 2;
  auto* host = static_cast<char*>(fixture.pinned);
  const auto start = Clock::now();
  for (size_t i = 0; i < count; ++i) {
    cl_event written = nullptr, read = nullptr;
    check(clEnqueueWriteBuffer(side.queue, fixture.device, CL_FALSE, 0, half, host, 0, nullptr, &written),
          "clEnqueueWriteBuffer");
    check(clEnqueueReadBuffer(side.queue, fixture.device, CL_FALSE, 0, half, host + half, 1, &written, &read),
          "clEnqueueReadBuffer");
    check(clReleaseEvent(written), "clReleaseEvent");
    check(clReleaseEvent(read), "clReleaseEvent");
  }
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) * static_cast<double>(count) / seconds_since(start) / 1e9;
}

// GB/s of making a memory object of `bytes` from host data (`make` makes it with
// CL_MEM_COPY_HOST_PTR from `host`), released after.
template <class Make>
double creation_rate(size_t bytes, const char* what, Make make) {
  const auto start = Clock::now();
  cl_int status = CL_SUCCESS;
  const cl_mem mem = make(&status);
  check(status, what);
  const double rate = static_cast<double>(bytes) / seconds_since(start) / 1e9;
  check(clReleaseMemObject(mem), "clReleaseMemObject");
  return rate;
}

double buffer_creation_rate(const Side& side, const Fixture& fixture, size_t bytes) {
  return creation_rate(bytes, "clCreateBuffer(CL_MEM_COPY_HOST_PTR)", [&](cl_int* status) {
    return clCreateBuffer(side.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                          fixture.ordinary, status);
  });
}

// A 2D image of rows of image_row_bytes, from packed ordinary memory.
double image_creation_rate(const Side& side, const Fixture& fixture, size_t bytes) {
  const cl_image_format format{CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = image_row_bytes / 4;
  desc.image_height = bytes / image_row_bytes;
  return creation_rate(bytes, "clCreateImage(CL_MEM_COPY_HOST_PTR)", [&](cl_int* status) {
    return clCreateImage(side.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &format, &desc,
                         fixture.ordinary, status);
  });
}

// GB/s of `count` non-blocking transfers of `bytes` each (`enqueue` makes one), then clFinish.
template <class Enqueue>
double window_rate(const Side& side, size_t bytes, size_t count, const char* what, Enqueue enqueue) {
  const auto start = Clock::now();
  for (size_t i = 0; i < count; ++i) check(enqueue(), what);
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) * static_cast<double>(count) / seconds_since(start) / 1e9;
}

// Rectangular transfers of half of every row of `bytes` of host memory (rows of
// rect_row_bytes) to or from the buffer's start, packed.
double rect_rate(const Side& side, const Fixture& fixture, bool writes, bool pinned, size_t bytes, size_t count) {
  const size_t origin[3] = {0, 0, 0};
  const size_t region[3] = {rect_row_bytes / 2, bytes / rect_row_bytes, 1};
  void* host = host_memory(fixture, pinned);
  return window_rate(side, region[0] * region[1], count, writes ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect",
                     [&] {
                       return writes ? clEnqueueWriteBufferRect(side.queue, fixture.device, CL_FALSE, origin, origin,
                                                                region, 0, 0, rect_row_bytes, 0, host, 0, nullptr,
                                                                nullptr)
                                     : clEnqueueReadBufferRect(side.queue, fixture.device, CL_FALSE, origin, origin,
                                                               region, 0, 0, rect_row_bytes, 0, host, 0, nullptr,
                                                               nullptr);
                     });
}

// Transfers of the whole image from or to packed host memory.
double image_rate(const Side& side, const Fixture& fixture, bool writes, bool pinned, size_t bytes, size_t count) {
  const size_t origin[3] = {0, 0, 0};
  const size_t region[3] = {image_row_bytes / 4, bytes / image_row_bytes, 1};
  void* host = host_memory(fixture, pinned);
  return window_rate(side, bytes, count, writes ? "clEnqueueWriteImage" : "clEnqueueReadImage", [&] {
    return writes ? clEnqueueWriteImage(side.queue, fixture.image, CL_FALSE, origin, region, 0, 0, host, 0, nullptr,
                                        nullptr)
                  : clEnqueueReadImage(side.queue, fixture.image, CL_FALSE, origin, region, 0, 0, host, 0, nullptr,
                                       nullptr);
  });
}

// GB/s of mapping `bytes` of a buffer or image (`map` maps it blocking, with the flags given) for
// reading, then unmapping; or for writing (invalidating), filling the mapping, then unmapping:
// the data moves to the host at the map, or to the device at the unmap, if the runtime moves it.
template <class Map>
double map_rate(const Side& side, cl_mem mem, bool writes, size_t bytes, Map map) {
  const auto start = Clock::now();
  cl_int status = CL_SUCCESS;
  void* mapped = map(writes ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ, &status);
  check(status, "map");
  if (writes) std::memset(mapped, 2, bytes);
  check(clEnqueueUnmapMemObject(side.queue, mem, mapped, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) / seconds_since(start) / 1e9;
}

double buffer_map_rate(const Side& side, const Fixture& fixture, bool writes, size_t bytes) {
  return map_rate(side, fixture.device, writes, bytes, [&](cl_map_flags flags, cl_int* status) {
    return clEnqueueMapBuffer(side.queue, fixture.device, CL_TRUE, flags, 0, bytes, 0, nullptr, nullptr, status);
  });
}

double image_map_rate(const Side& side, const Fixture& fixture, bool writes, size_t bytes) {
  const size_t origin[3] = {0, 0, 0};
  const size_t region[3] = {image_row_bytes / 4, bytes / image_row_bytes, 1};
  size_t row_pitch = 0;
  return map_rate(side, fixture.image, writes, bytes, [&](cl_map_flags flags, cl_int* status) {
    return clEnqueueMapImage(side.queue, fixture.image, CL_TRUE, flags, origin, region, &row_pitch, nullptr, 0,
                             nullptr, nullptr, status);
  });
}

// The same for `bytes` of an SVM allocation.
double svm_map_rate(const Side& side, void* svm, bool writes, size_t bytes) {
  const auto start = Clock::now();
  check(clEnqueueSVMMap(side.queue, CL_TRUE, writes ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ, svm, bytes, 0,
                        nullptr, nullptr),
        "clEnqueueSVMMap");
  if (writes) std::memset(svm, 2, bytes);
  check(clEnqueueSVMUnmap(side.queue, svm, 0, nullptr, nullptr), "clEnqueueSVMUnmap");
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) / seconds_since(start) / 1e9;
}

// GB/s of one blocking clEnqueueSVMMemcpy of `bytes` from ordinary host memory into SVM, or back.
double svm_copy_rate(const Side& side, const Fixture& fixture, bool writes, size_t bytes) {
  void* host = host_memory(fixture, false);
  const auto start = Clock::now();
  check(clEnqueueSVMMemcpy(side.queue, CL_TRUE, writes ? fixture.svm : host, writes ? host : fixture.svm, bytes, 0,
                           nullptr, nullptr),
        "clEnqueueSVMMemcpy");
  return static_cast<double>(bytes) / seconds_since(start) / 1e9;
}

// The first mapping of a memory object just made (`make`), released after: what a program
// that maps each object once pays (HiveCL may set up shared memory at a first mapping).
template <class Make, class Map>
double first_map_rate(const Side& side, bool writes, size_t bytes, Make make, Map map) {
  const cl_mem mem = make();
  const double rate = map_rate(side, mem, writes, bytes, [&](cl_map_flags flags, cl_int* status) {
    return map(mem, flags, status);
  });
  check(clReleaseMemObject(mem), "clReleaseMemObject");
  return rate;
}

double new_buffer_map_rate(const Side& side, bool writes, size_t bytes) {
  return first_map_rate(
      side, writes, bytes,
      [&] {
        cl_int status = CL_SUCCESS;
        const cl_mem buffer = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
        check(status, "clCreateBuffer");
        return buffer;
      },
      [&](cl_mem buffer, cl_map_flags flags, cl_int* status) {
        return clEnqueueMapBuffer(side.queue, buffer, CL_TRUE, flags, 0, bytes, 0, nullptr, nullptr, status);
      });
}

double new_image_map_rate(const Side& side, bool writes, size_t bytes) {
  const size_t origin[3] = {0, 0, 0};
  const size_t region[3] = {image_row_bytes / 4, bytes / image_row_bytes, 1};
  size_t row_pitch = 0;
  return first_map_rate(
      side, writes, bytes, [&] { return make_image(side, bytes); },
      [&](cl_mem image, cl_map_flags flags, cl_int* status) {
        return clEnqueueMapImage(side.queue, image, CL_TRUE, flags, origin, region, &row_pitch, nullptr, 0, nullptr,
                                 nullptr, status);
      });
}

}  // namespace

int main() {
  // At least a byte: the sizes go up by multiplying.
  const size_t min_bytes = std::max<size_t>(1, env_size("HIVECL_BENCH_MIN_BYTES", size_t{64} << 10));
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{16} << 20);
  const size_t window = std::max<size_t>(1, env_size("HIVECL_BENCH_WINDOW", 32));
  SideBySide bench("transfers");
  const bool own_memory = env_size("HIVECL_BENCH_OWN_HOST_MEMORY", 0) != 0;
  std::vector<char> ordinary(max_bytes, 1), hivecl_ordinary(own_memory ? max_bytes : 0, 1);
  const Fixture native = make_fixture(bench.native, max_bytes, ordinary.data());
  const Fixture hivecl = make_fixture(bench.hivecl, max_bytes, own_memory ? hivecl_ordinary.data() : ordinary.data());
  const auto fixture_of = [&](const Side& side) -> const Fixture& { return &side == &bench.native ? native : hivecl; };
  const std::string path = path_label(bench.hivecl);
  std::printf("HiveCL data path: %s\n", path.c_str());
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = window_count(bytes, window);
    for (const bool pinned : {false, true}) {
      for (const bool writes : {true, false}) {
        const std::string what = std::string(writes ? "write " : "read ") + size_name(bytes) +
                                 (pinned ? ", pinned" : ", malloc");
        for (const bool blocking : {false, true}) {
          const std::string name =
              what + (blocking ? ", blocking " : ", x" + std::to_string(count) + " ") + path;
          bench.compare(name, "GB/s", bytes, [&](Side& side) {
            const Fixture& fixture = fixture_of(side);
            return transfer_rate(side, fixture.device, host_memory(fixture, pinned), writes, bytes,
                                 blocking ? 1 : count, blocking);
          });
        }
      }
    }
    bench.compare("write " + size_name(bytes / 2) + " and read it back after its event, pinned, x" +
                      std::to_string(count) + " " + path,
                  "GB/s", bytes, [&](Side& side) { return write_read_stream_rate(side, fixture_of(side), bytes, count); });
  }
  bench.compare("create " + size_name(max_bytes) + " from malloc memory " + path, "GB/s", max_bytes, [&](Side& side) {
    return buffer_creation_rate(side, fixture_of(side), max_bytes);
  });
  if (native.image && hivecl.image)
    bench.compare("create image " + size_name(max_bytes) + " from malloc memory " + path, "GB/s", max_bytes,
                  [&](Side& side) { return image_creation_rate(side, fixture_of(side), max_bytes); });
  const size_t count = window_count(max_bytes, window);
  for (const bool writes : {true, false}) {
    const std::string what = writes ? "write " : "read ";
    for (const bool pinned : {false, true})
      bench.compare(what + "rect " + size_name(max_bytes / 2) + ", half of every " + size_name(rect_row_bytes) +
                        " row, " + (pinned ? "pinned" : "malloc") + ", x" + std::to_string(count) + " " + path,
                    "GB/s", max_bytes / 2,
                    [&](Side& side) { return rect_rate(side, fixture_of(side), writes, pinned, max_bytes, count); });
    const std::string mapping = writes ? "map for writing " : "map for reading ";
    bench.compare(mapping + "buffer " + size_name(max_bytes) + ", unmap " + path, "GB/s", max_bytes,
                  [&](Side& side) { return buffer_map_rate(side, fixture_of(side), writes, max_bytes); });
    bench.compare(mapping + "a new buffer " + size_name(max_bytes) + ", unmap " + path, "GB/s", max_bytes,
                  [&](Side& side) { return new_buffer_map_rate(side, writes, max_bytes); });
    if (!native.image || !hivecl.image) continue;
    for (const bool pinned : {false, true})
      bench.compare(what + "image " + size_name(max_bytes) + (pinned ? ", pinned" : ", malloc") + ", x" +
                        std::to_string(count) + " " + path,
                    "GB/s", max_bytes,
                    [&](Side& side) { return image_rate(side, fixture_of(side), writes, pinned, max_bytes, count); });
    bench.compare(mapping + "image " + size_name(max_bytes) + ", unmap " + path, "GB/s", max_bytes,
                  [&](Side& side) { return image_map_rate(side, fixture_of(side), writes, max_bytes); });
    bench.compare(mapping + "a new image " + size_name(max_bytes) + ", unmap " + path, "GB/s", max_bytes,
                  [&](Side& side) { return new_image_map_rate(side, writes, max_bytes); });
  }
  for (const bool writes : {true, false}) {
    if (!native.svm || !hivecl.svm) break;
    bench.compare(std::string(writes ? "map for writing " : "map for reading ") + "SVM " + size_name(max_bytes) +
                      ", unmap " + path,
                  "GB/s", max_bytes, [&](Side& side) { return svm_map_rate(side, fixture_of(side).svm, writes, max_bytes); });
    bench.compare(std::string(writes ? "copy into " : "copy out of ") + "SVM " + size_name(max_bytes) +
                      ", malloc, blocking " + path,
                  "GB/s", max_bytes, [&](Side& side) { return svm_copy_rate(side, fixture_of(side), writes, max_bytes); });
  }
  std::printf("ratio: the fraction of native bandwidth HiveCL reaches\n");
  return 0;
}
