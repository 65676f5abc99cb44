// The link's ceiling: raw MPI between two separately started processes joined by
// connect/accept through the cluster's ompi-server, as HiveCL's client and proxy are, side by
// side with HiveCL doing the same over such a link. In this benchmark's rows the "native"
// columns are raw MPI and the "HiveCL" columns HiveCL:
//   round trip   8-byte MPI ping-pong  vs  clFinish on an empty queue (one call, one reply)
//   bandwidth    32 messages of one size, then a 1-byte answer  vs  32 non-blocking writes,
//                then clFinish (run with HIVECL_DATA_PATH=mpi for the same link)
// Runs under tests/with-cluster.sh; starts its MPI peer itself (bench-link --peer PORT_FILE).
//   HIVECL_BENCH_MAX_BYTES  largest message (default 16 MiB)
// bench-link --moves (under tests/cluster/with-two-proxies.sh): a buffer of a context over the
// devices of two proxies moved from one to the other (written on the first device, migrated to
// the second, which waits for it), against raw MPI streaming as many bytes in messages of the
// proxies' chunk size (`chunk_bytes`, as they read it) between two such processes.
#include <CL/cl.h>
#include <mpi.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/side_by_side.hpp"
#include "config.hpp"
#include "transport/mpi_defaults.hpp"
#include "transport/rendezvous.hpp"

extern char** environ;

using namespace hivecl::bench;

namespace {

constexpr int tag = 7;
constexpr size_t window = 32;
enum Order : int64_t { ping_pong, stream, quit };

// MPI as HiveCL's client and proxy start it: singletons that find ompi-server, same PML.
void init_mpi() {
  const char* cluster_dir = std::getenv("HIVECL_CLUSTER_DIR");
  if (!cluster_dir) die("HIVECL_CLUSTER_DIR is not set (run under tests/with-cluster.sh)", -1);
  const std::string uri = hivecl::transport::ompi_server_uri_path(cluster_dir);
  for (const auto& [variable, value] : hivecl::transport::standalone_mpi_settings(uri))
    setenv(variable.c_str(), value.c_str(), 0);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) die("MPI_Init_thread(MPI_THREAD_MULTIPLE)", -1);
}

// The peer: accepts one connection and answers orders until told to quit.
int serve(const std::string& port_file) {
  init_mpi();
  char port[MPI_MAX_PORT_NAME] = {};
  MPI_Open_port(MPI_INFO_NULL, port);
  std::ofstream(port_file + ".tmp") << port;
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  MPI_Comm link = MPI_COMM_NULL;
  MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &link);
  std::vector<char> data;
  for (int64_t order[3] = {};;) {
    MPI_Recv(order, 3, MPI_INT64_T, 0, tag, link, MPI_STATUS_IGNORE);
    const auto size = static_cast<size_t>(order[1]);
    if (order[0] == quit) break;
    data.resize(std::max<size_t>(size, 8));
    for (int64_t i = 0; i < order[2]; ++i) {
      MPI_Recv(data.data(), static_cast<int>(size), MPI_BYTE, 0, tag, link, MPI_STATUS_IGNORE);
      if (order[0] == ping_pong) MPI_Send(data.data(), static_cast<int>(size), MPI_BYTE, 0, tag, link);
    }
    if (order[0] == stream) MPI_Send(data.data(), 1, MPI_BYTE, 0, tag, link);
  }
  MPI_Comm_free(&link);
  MPI_Finalize();
  return 0;
}

class Peer {
 public:
  explicit Peer(const char* self) {
    const std::string port_file = std::string(std::getenv("HIVECL_CLUSTER_DIR")) + "/bench-link.port";
    std::vector<char*> argv{const_cast<char*>(self), const_cast<char*>("--peer"),
                            const_cast<char*>(port_file.c_str()), nullptr};
    if (posix_spawn(&pid_, self, nullptr, nullptr, argv.data(), environ) != 0) die("starting the MPI peer", -1);
    std::string port;
    for (int i = 0; i < 300 && port.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::ifstream(port_file) >> port;
    }
    if (port.empty()) die("the MPI peer's port", -1);
    MPI_Comm_connect(port.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &link_);
  }
  ~Peer() {
    order(quit, 0, 0);
    MPI_Comm_free(&link_);
    waitpid(pid_, nullptr, 0);
  }
  // Microseconds per 8-byte round trip.
  double round_trip(int count) {
    char byte[8] = {};
    order(ping_pong, sizeof byte, count);
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      MPI_Send(byte, sizeof byte, MPI_BYTE, 0, tag, link_);
      MPI_Recv(byte, sizeof byte, MPI_BYTE, 0, tag, link_, MPI_STATUS_IGNORE);
    }
    return seconds_since(start) / count * 1e6;
  }
  // GB/s of `count` non-blocking messages of `data`, then the peer's answer.
  double bandwidth(const std::vector<char>& data, size_t count = window) {
    order(stream, data.size(), static_cast<int64_t>(count));
    const auto start = Clock::now();
    std::vector<MPI_Request> requests(count);
    for (auto& request : requests)
      MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_BYTE, 0, tag, link_, &request);
    MPI_Waitall(static_cast<int>(count), requests.data(), MPI_STATUSES_IGNORE);
    char answer = 0;
    MPI_Recv(&answer, 1, MPI_BYTE, 0, tag, link_, MPI_STATUS_IGNORE);
    return static_cast<double>(data.size() * count) / seconds_since(start) / 1e9;
  }

 private:
  void order(Order kind, size_t size, int64_t count) {
    int64_t message[3] = {kind, static_cast<int64_t>(size), count};
    MPI_Send(message, 3, MPI_INT64_T, 0, tag, link_);
  }
  pid_t pid_ = -1;
  MPI_Comm link_ = MPI_COMM_NULL;
};

// Runs `raw` and `hivecl` in turn (in_turn) for the harness's rounds and reports the row.
void compare(SideBySide& bench, const std::string& name, const char* unit, uint64_t bytes,
             const std::function<double()>& raw, const std::function<double()>& hivecl) {
  raw();
  hivecl();
  std::vector<double> raw_values(bench.rounds()), hivecl_values(bench.rounds());
  for (size_t round = 0; round < bench.rounds(); ++round)
    in_turn(round, [&] { raw_values[round] = raw(); }, [&] { hivecl_values[round] = hivecl(); });
  bench.report(name, unit, bytes, raw_values, hivecl_values);
}

// One context over HiveCL's first two devices (two proxies), a queue on each.
struct TwoDevices {
  cl_context context = nullptr;
  cl_command_queue queues[2] = {};
  TwoDevices() {
    const Side hivecl = open_side("HiveCL");
    cl_device_id devices[2] = {};
    cl_uint count = 0;
    check(clGetDeviceIDs(hivecl.platform, CL_DEVICE_TYPE_ALL, 2, devices, &count), "clGetDeviceIDs");
    if (count < 2) die("HiveCL shows one device: run under tests/cluster/with-two-proxies.sh", CL_DEVICE_NOT_FOUND);
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 2, devices, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    for (int i = 0; i < 2; ++i) {
      queues[i] = clCreateCommandQueue(context, devices[i], 0, &status);
      check(status, "clCreateCommandQueue");
    }
  }
  // GB/s of moving `buffer` (`bytes`) from the first device, which has just written it, to the second.
  double move(cl_mem buffer, size_t bytes) {
    const cl_uchar pattern = 7;
    check(clEnqueueFillBuffer(queues[0], buffer, &pattern, 1, 0, bytes, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    check(clFinish(queues[0]), "clFinish");
    const auto start = Clock::now();
    check(clEnqueueMigrateMemObjects(queues[1], 1, &buffer, 0, 0, nullptr, nullptr), "clEnqueueMigrateMemObjects");
    check(clFinish(queues[1]), "clFinish");
    return static_cast<double>(bytes) / seconds_since(start) / 1e9;
  }
};

int measure_moves(Peer& peer) {
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{256} << 20);
  const size_t chunk = hivecl::config().chunk_bytes;
  TwoDevices two;
  SideBySide bench("proxy-to-proxy");
  std::printf("columns: native = raw MPI between two connect/accept processes, HiveCL = a buffer moved from "
              "proxy to proxy\n");
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(two.context, CL_MEM_READ_WRITE, max_bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  for (size_t bytes = size_t{1} << 20; bytes <= max_bytes; bytes *= 4) {
    const std::vector<char> message(std::min(bytes, chunk), 1);
    const size_t count = (bytes + message.size() - 1) / message.size();
    compare(bench, "move of " + size_label(bytes), "GB/s", bytes, [&] { return peer.bandwidth(message, count); },
            [&] { return two.move(buffer, bytes); });
  }
  clReleaseMemObject(buffer);
  std::printf("ratio: proxy to proxy / raw MPI (fraction of the link)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--peer") return serve(argv[2]);
  init_mpi();
  if (argc == 2 && std::string(argv[1]) == "--moves") {
    Peer peer(argv[0]);
    return measure_moves(peer);
  }
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{16} << 20);
  {
    Peer peer(argv[0]);
    SideBySide bench("link");
    std::printf("columns: native = raw MPI between two connect/accept processes, HiveCL = HiveCL's calls\n");
    const Side& hivecl = bench.hivecl;
    compare(bench, "round trip: MPI ping-pong / clFinish", "us", 0, [&] { return peer.round_trip(200); },
            [&] {
              const auto start = Clock::now();
              for (int i = 0; i < 200; ++i) check(clFinish(hivecl.queue), "clFinish");
              return seconds_since(start) / 200 * 1e6;
            });
    std::vector<char> data(max_bytes, 1);
    cl_int status = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(hivecl.context, CL_MEM_READ_WRITE, max_bytes, nullptr, &status);
    check(status, "clCreateBuffer");
    for (size_t bytes = size_t{64} << 10; bytes <= max_bytes; bytes *= 4) {
      const std::vector<char> message(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(bytes));
      compare(bench, "x32 MPI sends / writes, " + std::to_string(bytes >> 10) + " KiB", "GB/s", bytes,
              [&] { return peer.bandwidth(message); },
              [&] {
                const auto start = Clock::now();
                for (size_t i = 0; i < window; ++i)
                  check(clEnqueueWriteBuffer(hivecl.queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr,
                                             nullptr),
                        "clEnqueueWriteBuffer");
                check(clFinish(hivecl.queue), "clFinish");
                return static_cast<double>(bytes * window) / seconds_since(start) / 1e9;
              });
    }
    clReleaseMemObject(buffer);
    std::printf("ratio: HiveCL / raw MPI (us: times slower; GB/s: fraction of the link)\n");
  }
  return 0;
}
