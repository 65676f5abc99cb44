// VOCL's window test with one platform alone in the process: a window of non-blocking writes
// (or reads) of one size then clFinish, and single blocking transfers, of ordinary (malloc)
// and page-locked host memory (a mapped CL_MEM_ALLOC_HOST_PTR buffer). bench-transfers runs
// the same side by side in one process, where NVIDIA moves ordinary memory for its two
// contexts at different speeds, two native ones too (in A/A runs one side's windows from 4 MiB
// were 1.2-1.4 times the other's: PERFORMANCE.md, fifty-fifth session); here each process holds
// one context, as a program does, and the comparison is between processes
// (tests/bench/passes-in-process.sh, passes.py).
//   bench-alone PLATFORM_NAME
//   HIVECL_BENCH_ROUNDS, HIVECL_BENCH_MIN_BYTES / HIVECL_BENCH_MAX_BYTES (64 KiB .. 16 MiB, powers of
//   4 apart), HIVECL_BENCH_WINDOW (32; fewer where size * window > 1 GiB)
//   HIVECL_BENCH_CSV: CSV file to append to: benchmark,case,bytes,unit,platform,median,min,max
#include <CL/cl.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

class Report {
 public:
  explicit Report(std::string platform)
      : platform_(std::move(platform)), csv_(open_csv("benchmark,case,bytes,unit,platform,median,min,max\n")) {}

  void row(const std::string& case_name, size_t bytes, std::vector<double> rates) {
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    std::printf("%-40s GB/s %10.2f [%6.2f-%6.2f]\n", case_name.c_str(), median, rates.front(), rates.back());
    std::fflush(stdout);
    if (csv_)
      csv_ << "alone,\"" << case_name << "\"," << bytes << ",GB/s,\"" << platform_ << "\"," << median << ','
           << rates.front() << ',' << rates.back() << '\n';
  }

 private:
  std::string platform_;
  std::ofstream csv_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bench-alone PLATFORM_NAME\n");
    return 2;
  }
  // At least a byte: the sizes go up by multiplying.
  const size_t min_bytes = std::max<size_t>(1, env_size("HIVECL_BENCH_MIN_BYTES", size_t{64} << 10));
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{16} << 20);
  const size_t window = std::max<size_t>(1, env_size("HIVECL_BENCH_WINDOW", 32));
  const size_t rounds = std::max<size_t>(1, env_size("HIVECL_BENCH_ROUNDS", 7));
  const Side side = open_side(argv[1]);
  std::printf("alone — platform %s, %zu rounds\n", argv[1], rounds);
  cl_int status = CL_SUCCESS;
  const cl_mem device = clCreateBuffer(side.context, CL_MEM_READ_WRITE, max_bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  const cl_mem pinned_buffer = clCreateBuffer(side.context, CL_MEM_ALLOC_HOST_PTR, max_bytes, nullptr, &status);
  check(status, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
  void* pinned = clEnqueueMapBuffer(side.queue, pinned_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, max_bytes, 0,
                                    nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer");
  std::vector<char> ordinary(max_bytes, 1);
  Report report(argv[1]);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = window_count(bytes, window);
    for (const bool page_locked : {false, true})
      for (const bool writes : {true, false})
        for (const bool blocking : {false, true}) {
          void* host = page_locked ? pinned : ordinary.data();
          const auto measure = [&] {
            return transfer_rate(side, device, host, writes, bytes, blocking ? 1 : count, blocking);
          };
          measure();  // warm-up, not counted
          std::vector<double> rates(rounds);
          for (double& rate : rates) rate = measure();
          report.row(std::string(writes ? "write " : "read ") + size_label(bytes) +
                         (page_locked ? ", pinned" : ", malloc") +
                         (blocking ? ", blocking" : ", x" + std::to_string(count)),
                     bytes, std::move(rates));
        }
  }
  check(clEnqueueUnmapMemObject(side.queue, pinned_buffer, pinned, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  check(clFinish(side.queue), "clFinish");
  return 0;
}
