// A proxy session's answers to requests that name the client's memory (a buffer's initial data,
// rectangular and image transfers in place), and to sub-group queries beyond their bounds: run by
// the session's own worker against the native runtime, with a link that records the replies'
// statuses. The session must refuse what the data path does not allow and serve on, and do what
// it allows.
#include <CL/cl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "catch.hpp"
#include "proxy/data_path.hpp"
#include "proxy/server.hpp"
#include "proxy/session.hpp"
#include "transport/shared_segment.hpp"

using namespace hivecl;
using namespace hivecl::protocol;

namespace {

// Records the status of each reply, and of each read's data, by sequence; bulk data is never
// asked for over the link here.
class RecordingLink final : public proxy::ClientLink {
 public:
  void listen(std::function<void(Bytes&&)>, std::function<bool()>) override {}
  void send_frame(Bytes&& frame) override {
    Reader reader(frame);
    FrameHeader header;
    if (!decode(reader, header)) return;
    std::lock_guard lock(mutex_);
    statuses_[header.sequence] = header.status;
    arrived_.notify_all();
  }
  void send_chunk(uint64_t, const std::byte*, size_t, std::function<void()> sent) override { sent(); }
  void send_status(uint64_t sequence, cl_int status) override {
    std::lock_guard lock(mutex_);
    data_statuses_[sequence] = status;
    arrived_.notify_all();
  }
  std::shared_ptr<transport::Completion> receive_chunk(uint64_t, std::byte*, size_t) override {
    auto completion = std::make_shared<transport::Completion>();
    completion->complete(transport::OpStatus::failed);
    return completion;
  }
  bool receive_bulk(uint64_t, std::byte*, size_t, size_t) override { return false; }
  void forget() override {}

  // The status of reply `sequence`, waiting for it up to ten seconds.
  cl_int status_of(uint64_t sequence) { return wait_for(statuses_, sequence); }
  // The status that ends request `sequence`'s data (reads), waiting as long.
  cl_int data_status_of(uint64_t sequence) { return wait_for(data_statuses_, sequence); }

 private:
  cl_int wait_for(std::map<uint64_t, cl_int>& statuses, uint64_t sequence) {
    std::unique_lock lock(mutex_);
    const bool came = arrived_.wait_for(lock, std::chrono::seconds(10), [&] { return statuses.count(sequence) != 0; });
    REQUIRE(came);
    return statuses[sequence];
  }

  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<uint64_t, cl_int> statuses_;
  std::map<uint64_t, cl_int> data_statuses_;
};

template <class M>
Bytes frame_of(uint64_t sequence, const typename M::Request& request) {
  Bytes frame = to_bytes(FrameHeader{.opcode = M::opcode, .sequence = sequence});
  const Bytes body = to_bytes(request);
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

std::vector<proxy::NativeDevice> native_devices(const Config& config) {
  auto devices = proxy::find_native_devices(config);
  REQUIRE(!devices.empty());
  return devices;
}

// The data path to this process as the client: its memory (it plays the client), or MPI (null:
// as until a Hello says otherwise).
std::unique_ptr<proxy::DataPath> this_process_path(bool memory_path) {
  if (!memory_path) return nullptr;
  return std::make_unique<proxy::MemoryDataPath>(transport::PeerMemory(::getpid(), proxy::copy_team(1)));
}

// A session of its own on the native runtime, started, with a link that records its answers.
// Its data path is MPI (as until a Hello says otherwise) unless `path` is given; `pid` is the
// client's. The session's worker is joined, its objects released, when it goes.
struct StartedSession {
  explicit StartedSession(std::unique_ptr<proxy::DataPath> path = nullptr, int32_t pid = 0, Config settings = {})
      : config(std::move(settings)), server(config, native_devices(config)), session(1, link, server) {
    session.set_greeted("test", pid);
    if (path) session.set_data_path(std::move(path));
    session.start();
  }
  // A test that stops early (a failed REQUIRE, an exception) sent no Goodbye: the client is then
  // lost, which ends the worker, so that the failure is reported instead of the join hanging.
  ~StartedSession() { session.lose(); }
  template <class M>
  void send(uint64_t sequence, const typename M::Request& request) {
    session.deliver(frame_of<M>(sequence, request));
  }
  // Requests 1 to 4: a context, a queue, a 4 KiB buffer and a 16 x 16 RGBA8 image, under the ids below.
  static constexpr ObjectId context = first_session_id, queue = context + 1, buffer = context + 2,
                            image = context + 3;
  void make_objects() {
    send<CreateContext>(1, {.id = context, .devices = {1}});
    send<CreateCommandQueue>(2, {.id = queue, .context = context, .device = 1});
    send<CreateBuffer>(3, {.id = buffer, .context = context, .flags = CL_MEM_READ_WRITE, .size = 4096});
    send<CreateImage>(4, {.id = image, .context = context, .flags = CL_MEM_READ_WRITE,
                          .format = {CL_RGBA, CL_UNSIGNED_INT8},
                          .shape = {.type = CL_MEM_OBJECT_IMAGE2D, .width = 16, .height = 16}});
  }

  const Config config;
  proxy::Server server;
  std::shared_ptr<RecordingLink> link = std::make_shared<RecordingLink>();
  proxy::Session session;
};

// A zeroed shared segment of this process (playing the client), and ranges in it as a request
// names them.
struct ClientSegment {
  static constexpr size_t size = 16 << 10;
  ClientSegment() : segment(transport::SharedSegment::create(size)) {
    REQUIRE(segment);
    std::memset(segment->data(), 0, size);
  }
  std::byte* bytes() const { return segment->data(); }
  SharedRange at(uint64_t offset) const {
    return {.segment = 1, .fd = segment->fd(), .inode = segment->inode(), .segment_size = size, .offset = offset};
  }
  std::unique_ptr<transport::SharedSegment> segment;
};

// The statuses of the segment cases below: requests 1-4 made the objects, 5-7 moved data
// (served on the memory path, refused over MPI), 8-11 were refused, 12 finished the queue.
void check_segment_statuses(StartedSession& test, bool memory_path) {
  for (uint64_t sequence = 1; sequence <= 4; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  for (uint64_t sequence = 5; sequence <= 7; ++sequence)
    CHECK(test.link->status_of(sequence) == (memory_path ? CL_SUCCESS : CL_INVALID_VALUE));
  for (uint64_t sequence = 8; sequence <= 11; ++sequence) CHECK(test.link->status_of(sequence) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(12) == CL_SUCCESS);
  if (memory_path) CHECK(test.link->data_status_of(7) == CL_SUCCESS);
}

// The segment cases' read-back: `rows` rows of 64 bytes at `back`, of which rows 2-5, bytes
// 16-47, were written (`written(y, x)` gives each such byte) and the rest cleared.
template <class Written>
void check_box_read_back(const std::byte* back, size_t rows, Written written) {
  for (size_t y = 0; y < rows; ++y)
    for (size_t x = 0; x < 64; ++x) {
      const bool inside = y >= 2 && y < 6 && x >= 16 && x < 48;
      CHECK(back[y * 64 + x] == (inside ? written(y, x) : std::byte{0}));
    }
}

}  // namespace

TEST_CASE("Context properties other than interop user sync are refused before the runtime sees them, and the "
          "session serves on",
          "[session][bad-input]") {
  StartedSession test;
  const int64_t sync = CL_CONTEXT_INTEROP_USER_SYNC;
  const std::vector<std::vector<int64_t>> refused{
      {CL_CONTEXT_PLATFORM, 0x1234}, {0x7fff, 1}, {sync, 7}, {sync, CL_TRUE, sync, CL_TRUE}};
  uint64_t sequence = 0;
  for (const auto& properties : refused) {
    test.send<CreateContext>(++sequence, {.id = first_session_id + sequence, .devices = {1}, .properties = properties});
    CHECK(test.link->status_of(sequence) == CL_INVALID_PROPERTY);
  }
  test.send<CreateContext>(++sequence, {.id = first_session_id + sequence, .devices = {1}, .properties = {sync}});
  CHECK(test.link->status_of(sequence) == CL_INVALID_VALUE);
  test.send<CreateContext>(++sequence, {.id = first_session_id + sequence, .devices = {1}, .properties = {sync, CL_FALSE}});
  CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  CHECK(test.session.usage().objects() == 1);
  test.send<Goodbye>(++sequence, {});
}

TEST_CASE("The launch gate covers the queues of NVIDIA's platform by default, every in-order queue when set to a "
          "duration, none when off",
          "[session][launch-gate]") {
  Config every_platform, off;
  REQUIRE(every_platform.set("launch_gate_us", "0"));
  REQUIRE(off.set("launch_gate_us", "off"));
  const bool nvidia = native_devices(Config{}).front().platform_name.find("NVIDIA") != std::string::npos;
  for (const auto& [config, gated] : {std::pair{Config{}, nvidia}, std::pair{every_platform, true}, std::pair{off, false}}) {
    StartedSession test(nullptr, 0, config);
    test.make_objects();
    // The session's tables are its worker's: looked into only once it has run every request.
    REQUIRE(test.link->status_of(2) == CL_SUCCESS);
    REQUIRE(test.link->status_of(4) == CL_SUCCESS);
    const auto queue = test.session.get<cl_command_queue>(StartedSession::queue);
    CHECK(test.session.facts_of(queue).gated == gated);
    test.send<Goodbye>(5, {});
  }
}

TEST_CASE("A buffer's initial data named by address is refused off the memory path, and the session serves on",
          "[session][bad-input]") {
  StartedSession test;
  constexpr ObjectId context = first_session_id, forged = context + 1, unnamed = context + 2, plain = context + 3;
  test.send<CreateContext>(1, {.id = context, .devices = {1}});
  test.send<CreateBuffer>(2, {.id = forged, .context = context, .flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              .size = 4096, .with_data = true, .host_address = 0x10000});
  test.send<CreateBuffer>(3, {.id = unnamed, .context = context, .flags = CL_MEM_READ_WRITE, .size = 4096,
                              .host_address = 0x10000});
  test.send<CreateBuffer>(4, {.id = plain, .context = context, .flags = CL_MEM_READ_WRITE, .size = 4096});
  CHECK(test.link->status_of(1) == CL_SUCCESS);
  CHECK(test.link->status_of(2) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(3) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(4) == CL_SUCCESS);
  CHECK(test.session.usage().objects() == 2);  // the context and the plain buffer
  test.send<Goodbye>(5, {});
}

TEST_CASE("Rectangular and image transfers in the application's memory are refused off the in-process path, "
          "and the session serves on", "[session][bad-input]") {
  StartedSession test;
  const ObjectId queue = test.queue, buffer = test.buffer, image = test.image;
  test.make_objects();
  const BufferBox box{.origin = {0, 0, 0}, .region = {64, 4, 1}, .row_pitch = 64, .slice_pitch = 256};
  // The address alone would be refused on this path as for any transfer (check_data_path).
  const InPlace forged{.used = true, .row_pitch = 128, .slice_pitch = 512, .blocking = true};
  const InPlace pitches_alone{.row_pitch = 128};
  const Coordinates origin{0, 0, 0}, region{16, 16, 1};
  test.send<ReadBufferRect>(5, {.queue = queue, .mem = buffer, .box = box, .in_place = forged});
  test.send<WriteBufferRect>(6, {.queue = queue, .mem = buffer, .box = box, .in_place = forged});
  test.send<ReadImage>(7, {.queue = queue, .image = image, .origin = origin, .region = region, .in_place = forged});
  test.send<WriteImage>(8, {.queue = queue, .image = image, .origin = origin, .region = region, .data_bytes = 1024,
                            .in_place = forged});
  test.send<ReadBufferRect>(9, {.queue = queue, .mem = buffer, .box = box, .in_place = pitches_alone});
  test.send<ReadImage>(10, {.queue = queue, .image = image, .origin = origin, .region = region,
                            .in_place = pitches_alone});
  test.send<Finish>(11, {.queue = queue});
  for (uint64_t sequence = 1; sequence <= 4; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  for (uint64_t sequence = 5; sequence <= 10; ++sequence) CHECK(test.link->status_of(sequence) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(11) == CL_SUCCESS);
  test.send<Goodbye>(12, {});
}

TEST_CASE("Native mappings and buffers using the client's memory are refused off the in-process path, and the "
          "session serves on", "[session][bad-input]") {
  // Through a proxy the client's addresses are not the proxy's: on the MPI and memory paths alike.
  const bool memory_path = GENERATE(false, true);
  StartedSession test(this_process_path(memory_path), ::getpid());
  const ObjectId context = test.context, queue = test.queue, buffer = test.buffer, image = test.image,
                 using_host = image + 1;
  std::vector<std::byte> host(4096);
  test.make_objects();
  test.send<MapBuffer>(5, {.queue = queue, .mem = buffer, .flags = CL_MAP_READ, .size = 4096, .blocking = true});
  test.send<MapImage>(6, {.queue = queue, .image = image, .flags = CL_MAP_READ, .origin = {0, 0, 0},
                          .region = {16, 16, 1}});
  test.send<UnmapMemObject>(7, {.queue = queue, .mem = buffer, .address = reinterpret_cast<uint64_t>(host.data())});
  test.send<CreateBuffer>(8, {.id = using_host, .context = context, .flags = CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              .size = 4096, .with_data = true,
                              .host_address = reinterpret_cast<uint64_t>(host.data())});
  test.send<CreateImage>(9, {.id = using_host, .context = context, .flags = CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                             .format = {CL_RGBA, CL_UNSIGNED_INT8},
                             .shape = {.type = CL_MEM_OBJECT_IMAGE2D, .width = 16, .height = 16},
                             .host_address = reinterpret_cast<uint64_t>(host.data()), .row_pitch = 64});
  test.send<Finish>(10, {.queue = queue});
  for (uint64_t sequence = 1; sequence <= 4; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  for (uint64_t sequence = 5; sequence <= 9; ++sequence) CHECK(test.link->status_of(sequence) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(10) == CL_SUCCESS);
  CHECK(test.session.usage().objects() == 4);  // no mapping's event, neither refused object
  test.send<Goodbye>(11, {});
}

TEST_CASE("On the memory data path, an image's initial data is read from the client's memory with its pitches; "
          "named otherwise, it is refused", "[session][bad-input]") {
  // This process plays the client. A 16 x 4 RGBA8 image from rows 96 bytes apart.
  std::vector<std::byte> rows(4 * 96, std::byte{0xEE}), back(16 * 4 * 4);
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 64; ++x) rows[y * 96 + x] = std::byte(y * 64 + x + 5);
  const uint64_t address = reinterpret_cast<uint64_t>(rows.data());
  const bool memory_path = GENERATE(false, true);
  StartedSession test(this_process_path(memory_path), ::getpid());
  constexpr ObjectId context = first_session_id, queue = context + 1, image = context + 2, buffer = context + 3;
  const ImageFormat rgba8{CL_RGBA, CL_UNSIGNED_INT8};
  const ImageShape shape{.type = CL_MEM_OBJECT_IMAGE2D, .width = 16, .height = 4};
  test.send<CreateContext>(1, {.id = context, .devices = {1}});
  test.send<CreateCommandQueue>(2, {.id = queue, .context = context, .device = 1});
  test.send<CreateBuffer>(3, {.id = buffer, .context = context, .flags = CL_MEM_READ_WRITE, .size = 4096});
  // Named and sent at once; an image made from a buffer named; then the image itself.
  test.send<CreateImage>(4, {.id = image, .context = context, .flags = CL_MEM_COPY_HOST_PTR, .format = rgba8,
                             .shape = shape, .data_bytes = 256, .host_address = address, .row_pitch = 96});
  test.send<CreateImage>(5, {.id = image, .context = context, .flags = CL_MEM_COPY_HOST_PTR, .format = rgba8,
                             .shape = {.type = CL_MEM_OBJECT_IMAGE1D_BUFFER, .width = 16, .buffer = buffer},
                             .host_address = address});
  test.send<CreateImage>(6, {.id = image, .context = context, .flags = CL_MEM_COPY_HOST_PTR, .format = rgba8,
                             .shape = shape, .host_address = address, .row_pitch = 96});
  test.send<ReadImage>(7, {.queue = queue, .image = image, .origin = {0, 0, 0}, .region = {16, 4, 1},
                           .host_address = reinterpret_cast<uint64_t>(back.data())});
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  CHECK(test.link->status_of(4) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(5) == CL_INVALID_VALUE);
  if (memory_path) {
    CHECK(test.link->status_of(6) == CL_SUCCESS);
    CHECK(test.link->data_status_of(7) == CL_SUCCESS);
    for (size_t y = 0; y < 4; ++y)
      for (size_t x = 0; x < 64; ++x) CHECK(back[y * 64 + x] == rows[y * 96 + x]);
  } else {
    CHECK(test.link->status_of(6) == CL_INVALID_VALUE);
  }
  test.send<Goodbye>(8, {});
}

TEST_CASE("On the memory data path, image regions move straight to and from a shared segment with their pitches; "
          "a segment named with an address, a pitch too short or a range beyond it are refused",
          "[session][bad-input]") {
  // This process plays the client and its segment: a 16 x 16 RGBA8 image (rows of 64 bytes) is
  // cleared from offset 8192, an 8 x 4 region at (4, 2) written with the whole image's pitches
  // from offset 0 (as a mapping lies), and the whole image read back to offset 4096.
  constexpr size_t cleared = 8192, whole = 4096, region_at = 2 * 64 + 4 * 4;
  const ClientSegment segment;
  std::byte* bytes = segment.bytes();
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 32; ++x) bytes[region_at + y * 64 + x] = std::byte(y * 32 + x + 1);
  const bool memory_path = GENERATE(false, true);
  StartedSession test(this_process_path(memory_path), ::getpid());
  const ObjectId queue = test.queue, image = test.image;
  const Coordinates everywhere{0, 0, 0}, all{16, 16, 1}, region{8, 4, 1};
  const InPlace image_rows{.used = true, .row_pitch = 64};
  test.make_objects();
  test.send<WriteImage>(5, {.queue = queue, .image = image, .origin = everywhere, .region = all,
                            .shared = segment.at(cleared), .data_bytes = 1024});
  test.send<WriteImage>(6, {.queue = queue, .image = image, .origin = {4, 2, 0}, .region = region,
                            .shared = segment.at(region_at), .data_bytes = 128, .in_place = image_rows});
  test.send<ReadImage>(7, {.queue = queue, .image = image, .origin = everywhere, .region = all,
                           .shared = segment.at(whole)});
  test.send<ReadImage>(8, {.queue = queue, .image = image, .origin = everywhere, .region = all,
                           .host_address = reinterpret_cast<uint64_t>(bytes + whole), .shared = segment.at(whole)});
  test.send<ReadImage>(9, {.queue = queue, .image = image, .origin = {4, 2, 0}, .region = region,
                           .shared = segment.at(region_at), .in_place = {.used = true, .row_pitch = 16}});
  test.send<ReadImage>(10, {.queue = queue, .image = image, .origin = everywhere, .region = all,
                            .shared = segment.at(ClientSegment::size - 512)});
  test.send<WriteImage>(11, {.queue = queue, .image = image, .origin = {4, 2, 0}, .region = region,
                             .shared = segment.at(0), .data_bytes = 128,
                             .in_place = {.used = true, .row_pitch = uint64_t{1} << 63}});
  test.send<Finish>(12, {.queue = queue});
  check_segment_statuses(test, memory_path);
  if (memory_path) check_box_read_back(bytes + whole, 16, [&](size_t y, size_t x) { return bytes[y * 64 + x]; });
  test.send<Goodbye>(13, {});
}

TEST_CASE("On the memory data path, a buffer's box moves straight to and from a shared segment with the host "
          "pitches; a segment named with an address, a pitch too short or a range beyond it are refused",
          "[session][bad-input]") {
  // This process plays the client and its segment. The 4 KiB buffer, 64-byte rows, is cleared
  // from offset 8192, a 32 x 4 box at (16, 2) written from rows 100 bytes apart at offset 0, and
  // the whole buffer read back to offset 4096.
  constexpr size_t cleared = 8192, whole = 4096, host_pitch = 100;
  const ClientSegment segment;
  std::byte* bytes = segment.bytes();
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 32; ++x) bytes[y * host_pitch + x] = std::byte(y * 32 + x + 1);
  const bool memory_path = GENERATE(false, true);
  StartedSession test(this_process_path(memory_path), ::getpid());
  const ObjectId queue = test.queue, buffer = test.buffer;
  const BufferBox all{.origin = {0, 0, 0}, .region = {64, 64, 1}, .row_pitch = 64, .slice_pitch = 4096};
  const BufferBox box{.origin = {16, 2, 0}, .region = {32, 4, 1}, .row_pitch = 64, .slice_pitch = 4096};
  const InPlace packed{.used = true}, host_rows{.used = true, .row_pitch = host_pitch};
  test.make_objects();
  test.send<WriteBufferRect>(5, {.queue = queue, .mem = buffer, .box = all, .shared = segment.at(cleared),
                                 .in_place = packed});
  test.send<WriteBufferRect>(6, {.queue = queue, .mem = buffer, .box = box, .shared = segment.at(0),
                                 .in_place = host_rows});
  test.send<ReadBufferRect>(7, {.queue = queue, .mem = buffer, .box = all, .shared = segment.at(whole),
                                .in_place = packed});
  test.send<ReadBufferRect>(8, {.queue = queue, .mem = buffer, .box = all,
                                .host_address = reinterpret_cast<uint64_t>(bytes + whole),
                                .shared = segment.at(whole), .in_place = packed});
  test.send<ReadBufferRect>(9, {.queue = queue, .mem = buffer, .box = box, .shared = segment.at(0),
                                .in_place = {.used = true, .row_pitch = 16}});
  test.send<ReadBufferRect>(10, {.queue = queue, .mem = buffer, .box = all,
                                 .shared = segment.at(ClientSegment::size - 512), .in_place = packed});
  test.send<WriteBufferRect>(11, {.queue = queue, .mem = buffer, .box = box, .shared = segment.at(0),
                                  .in_place = {.used = true, .row_pitch = uint64_t{1} << 63}});
  test.send<Finish>(12, {.queue = queue});
  check_segment_statuses(test, memory_path);
  if (memory_path)
    check_box_read_back(bytes + whole, 64,
                        [&](size_t y, size_t x) { return bytes[(y - 2) * host_pitch + x - 16]; });
  test.send<Goodbye>(13, {});
}

TEST_CASE("On the memory data path, the proxy scatters a box's rows into the client's memory with its pitches, "
          "and refuses a blocking transfer in place", "[session][bad-input]") {
  // This process plays the client: its memory is reachable. A 64 x 4 box, rows 128 bytes apart.
  std::vector<std::byte> contents(256), rows(512, std::byte{0xEE});
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = std::byte(i * 3 + 1);
  StartedSession test(std::make_unique<proxy::MemoryDataPath>(transport::PeerMemory(::getpid(), proxy::copy_team(1))),
                      ::getpid());
  constexpr ObjectId context = first_session_id, queue = context + 1, buffer = context + 2;
  test.send<CreateContext>(1, {.id = context, .devices = {1}});
  test.send<CreateCommandQueue>(2, {.id = queue, .context = context, .device = 1});
  test.send<CreateBuffer>(3, {.id = buffer, .context = context, .flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              .size = 256, .with_data = true,
                              .host_address = reinterpret_cast<uint64_t>(contents.data())});
  const BufferBox box{.origin = {0, 0, 0}, .region = {64, 4, 1}, .row_pitch = 64, .slice_pitch = 256};
  const uint64_t address = reinterpret_cast<uint64_t>(rows.data());
  test.send<ReadBufferRect>(4, {.queue = queue, .mem = buffer, .box = box, .host_address = address,
                                .in_place = {.used = true, .row_pitch = 128, .blocking = true}});
  test.send<ReadBufferRect>(5, {.queue = queue, .mem = buffer, .box = box, .host_address = address,
                                .in_place = {.used = true, .row_pitch = 128, .slice_pitch = 512}});
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  CHECK(test.link->status_of(4) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(5) == CL_SUCCESS);
  CHECK(test.link->data_status_of(5) == CL_SUCCESS);  // after the data
  for (size_t y = 0; y < 4; ++y)
    for (size_t x = 0; x < 128; ++x)
      CHECK(rows[y * 128 + x] == (x < 64 ? contents[y * 64 + x] : std::byte{0xEE}));
  test.send<Goodbye>(6, {});
}

TEST_CASE("A sub-group query with an input or a value size beyond its bound, or of an unknown kernel, is refused, "
          "and the session serves on", "[session][bad-input]") {
  StartedSession test;
  constexpr ObjectId context = first_session_id, program = context + 1, kernel = context + 2;
  test.send<CreateContext>(1, {.id = context, .devices = {1}});
  test.send<CreateProgramWithSource>(2, {.id = program, .context = context,
                                         .source = "kernel void one(global int* out) { out[0] = 1; }"});
  test.send<BuildProgram>(3, {.program = program});
  test.send<CreateKernel>(4, {.id = kernel, .program = program, .name = "one"});
  const GetInfo::Request query{.family = InfoFamily::kernel_sub_group, .object = kernel, .device = 1,
                               .param = CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, .input = Bytes(sizeof(size_t))};
  GetInfo::Request long_input = query, large_value = query, unknown_kernel = query;
  long_input.input.resize(max_sub_group_query_bytes + 1);
  large_value.value_size = max_sub_group_query_bytes + 1;
  unknown_kernel.object = kernel + 1;
  test.send<GetInfo>(5, long_input);
  test.send<GetInfo>(6, large_value);
  test.send<GetInfo>(7, unknown_kernel);
  test.send<GetInfo>(8, {.family = InfoFamily::kernel_work_group, .object = kernel, .device = 1,
                         .param = CL_KERNEL_WORK_GROUP_SIZE});
  for (uint64_t sequence = 1; sequence <= 4; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  CHECK(test.link->status_of(5) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(6) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(7) == CL_INVALID_KERNEL);
  CHECK(test.link->status_of(8) == CL_SUCCESS);
  test.send<Goodbye>(9, {});
}

TEST_CASE("Sub-devices of an unknown device, with properties cut short or too long, or under ids taken or "
          "repeated, are refused; those made serve a context and go with the session", "[session][bad-input]") {
  StartedSession test;
  cl_device_partition_property types[8] = {};
  REQUIRE(clGetDeviceInfo(test.server.devices().front().device, CL_DEVICE_PARTITION_PROPERTIES, sizeof types, types,
                          nullptr) == CL_SUCCESS);
  if (types[0] != CL_DEVICE_PARTITION_EQUALLY) {
    WARN("the device does not partition equally: not run");
    return;
  }
  cl_uint units = 0;
  REQUIRE(clGetDeviceInfo(test.server.devices().front().device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units,
                          nullptr) == CL_SUCCESS);
  const std::vector<int64_t> all_units{CL_DEVICE_PARTITION_BY_COUNTS, units, 0, 0};
  constexpr ObjectId first = first_session_id, second = first + 1, context = first + 2;
  const std::vector<int64_t> halves{CL_DEVICE_PARTITION_EQUALLY, 1, 0};
  test.send<CreateSubDevices>(1, {.device = first_session_id + 100, .properties = halves, .ids = {first}});
  test.send<CreateSubDevices>(2, {.device = 1000, .properties = halves, .ids = {first}});
  test.send<CreateSubDevices>(3, {.device = 1, .properties = {}, .ids = {first}});
  test.send<CreateSubDevices>(4, {.device = 1, .properties = std::vector<int64_t>(max_partition_properties + 1, 1),
                                  .ids = {first}});
  test.send<CreateSubDevices>(5, {.device = 1, .properties = {CL_DEVICE_PARTITION_EQUALLY}, .ids = {first}});
  test.send<CreateSubDevices>(6, {.device = 1, .properties = halves, .ids = {first, first, first}});
  test.send<CreateSubDevices>(7, {.device = 1, .properties = halves, .ids = {}});  // counted only
  test.send<CreateSubDevices>(8, {.device = 1, .properties = all_units, .ids = {first}});
  test.send<CreateSubDevices>(9, {.device = 1, .properties = all_units, .ids = {first}});  // the id is taken now
  test.send<CreateContext>(10, {.id = context, .devices = {first}});
  test.send<CreateSubDevices>(11, {.device = first, .properties = {CL_DEVICE_PARTITION_BY_COUNTS, 1, 0, 0},
                                   .ids = {second}});  // a sub-device of a sub-device
  test.send<Release>(12, {.kind = ObjectKind::device, .id = second});
  test.send<Finish>(13, {.queue = context});  // not a queue: refused, and the session serves on
  CHECK(test.link->status_of(1) == CL_INVALID_DEVICE);
  CHECK(test.link->status_of(2) == CL_INVALID_DEVICE);
  CHECK(test.link->status_of(3) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(4) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(5) != CL_SUCCESS);  // the runtime reads the count as 0
  CHECK(test.link->status_of(6) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(7) == CL_SUCCESS);
  CHECK(test.link->status_of(8) == CL_SUCCESS);
  CHECK(test.link->status_of(9) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(10) == CL_SUCCESS);
  CHECK(test.link->status_of(11) == (units > 1 ? CL_SUCCESS : CL_DEVICE_PARTITION_FAILED));
  CHECK(test.link->status_of(13) == CL_INVALID_COMMAND_QUEUE);
  test.send<Goodbye>(14, {});
}

TEST_CASE("SVM addresses a client names are checked against its session's allocations: outside one, in a freed "
          "one or in an ordinary buffer they are refused, and the session serves on", "[session][bad-input][svm]") {
  StartedSession test;
  test.make_objects();
  constexpr ObjectId svm = StartedSession::image + 1, program = svm + 1, kernel = svm + 2, over_svm = svm + 3;
  test.send<SvmAlloc>(5, {.id = svm, .context = StartedSession::context, .flags = CL_MEM_READ_WRITE, .size = 1024});
  if (test.link->status_of(5) == CL_OUT_OF_RESOURCES) {
    WARN("the native device has no SVM");
    return;
  }
  CHECK(test.link->status_of(5) == CL_SUCCESS);
  test.send<SvmAlloc>(6, {.id = svm + 10, .context = StartedSession::context,
                          .flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, .size = 64});
  test.send<SvmAlloc>(7, {.id = svm, .context = StartedSession::context, .size = 64});
  test.send<SvmAlloc>(8, {.id = svm + 10, .context = StartedSession::context + 100, .size = 64});
  CHECK(test.link->status_of(6) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(7) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(8) == CL_INVALID_CONTEXT);

  const auto over = [&](uint64_t sequence, ObjectId id, SvmAddress address, uint64_t size) {
    test.send<CreateBuffer>(sequence, {.id = id, .context = StartedSession::context, .flags = CL_MEM_USE_HOST_PTR,
                                       .size = size, .svm = address});
  };
  over(9, svm + 10, {svm, 1000}, 100);                    // past the allocation's end
  over(10, svm + 10, {StartedSession::buffer, 0}, 16);    // an ordinary buffer
  over(11, svm + 10, {svm, UINT64_MAX}, 2);               // an end past 2^64
  over(12, over_svm, {svm, 24}, 1000);
  CHECK(test.link->status_of(9) == CL_INVALID_HOST_PTR);
  CHECK(test.link->status_of(10) == CL_INVALID_HOST_PTR);
  CHECK(test.link->status_of(11) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(12) == CL_SUCCESS);

  test.send<CreateProgramWithSource>(13, {.id = program, .context = StartedSession::context,
                                          .source = "kernel void one(global int* out) { out[0] = 1; }"});
  test.send<BuildProgram>(14, {.program = program});
  test.send<CreateKernel>(15, {.id = kernel, .program = program, .name = "one"});
  for (uint64_t sequence = 13; sequence <= 15; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  const auto launch = [&](uint64_t sequence, ObjectId allocation, uint64_t offset) {
    const KernelArg arg{.index = 0, .kind = ArgKind::svm_pointer, .size = sizeof(void*), .object = allocation,
                        .offset = offset};
    test.send<EnqueueNDRangeKernel>(sequence, {.queue = StartedSession::queue, .kernel = kernel, .args = {arg},
                                               .work_dim = 1, .global_size = {1}});
  };
  launch(16, StartedSession::buffer, 0);  // an ordinary buffer named as an allocation
  launch(17, svm, 1025);
  launch(18, svm, 1020);
  CHECK(test.link->status_of(16) == CL_INVALID_KERNEL_ARGS);
  CHECK(test.link->status_of(17) == CL_INVALID_KERNEL_ARGS);
  CHECK(test.link->status_of(18) == CL_SUCCESS);

  test.send<SetKernelExecInfo>(19, {.kernel = kernel, .pointers = {{StartedSession::buffer, 0}}});
  test.send<SetKernelExecInfo>(20, {.kernel = kernel + 100, .pointers = {{svm, 0}}});
  test.send<SetKernelExecInfo>(21, {.kernel = kernel, .pointers = {{svm, 0}, {svm, 1024}}});
  CHECK(test.link->status_of(19) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(20) == CL_INVALID_KERNEL);
  CHECK(test.link->status_of(21) == CL_SUCCESS);

  // Freed (the buffer over it goes first, as an application must do): its addresses are no more.
  test.send<Release>(22, {.kind = ObjectKind::mem, .id = over_svm});
  test.send<Finish>(23, {.queue = StartedSession::queue});
  CHECK(test.link->status_of(23) == CL_SUCCESS);
  test.send<Release>(24, {.kind = ObjectKind::mem, .id = svm});
  test.send<SetKernelExecInfo>(25, {.kernel = kernel, .pointers = {{svm, 0}}});
  launch(26, svm, 0);
  CHECK(test.link->status_of(25) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(26) == CL_INVALID_KERNEL_ARGS);
  test.send<Goodbye>(27, {});
}

TEST_CASE("A range to expect from another proxy must lie inside its buffer, or on whole pixels inside its image; "
          "others are refused, and the session serves on", "[session][bad-input]") {
  StartedSession test;
  test.make_objects();  // a 4 KiB buffer, a 16 x 16 image of 4-byte pixels (1 KiB packed)
  constexpr ObjectId first_event = StartedSession::image + 1;
  const auto expect = [&](uint64_t sequence, ObjectId mem, uint64_t offset, uint64_t size) {
    Bytes ticket(peer_ticket_bytes, std::byte{0});
    ticket[0] = static_cast<std::byte>(sequence);  // one of its own per request
    test.send<ExpectPeerData>(sequence, {.ticket = ticket, .landing_queue = StartedSession::queue, .mem = mem,
                                         .offset = offset, .size = size, .event = first_event + sequence});
  };
  expect(5, StartedSession::image, 0, 1024);   // the whole image
  expect(6, StartedSession::image, 68, 900);   // from the 18th pixel
  expect(7, StartedSession::buffer, 1, 4095);  // a buffer's bytes, from any byte
  expect(8, StartedSession::image, 2, 4);      // in the middle of a pixel
  expect(9, StartedSession::image, 4, 6);      // part of a pixel at its end
  expect(10, StartedSession::image, 1020, 8);  // past the packed pixels
  expect(11, StartedSession::buffer, 4000, 97);
  expect(12, StartedSession::image, 0, 0);
  test.send<Finish>(13, {.queue = StartedSession::queue});
  for (uint64_t sequence = 5; sequence <= 7; ++sequence) CHECK(test.link->status_of(sequence) == CL_SUCCESS);
  for (uint64_t sequence = 8; sequence <= 12; ++sequence) CHECK(test.link->status_of(sequence) == CL_INVALID_VALUE);
  CHECK(test.link->status_of(13) == CL_SUCCESS);
  test.send<Goodbye>(14, {});
}
