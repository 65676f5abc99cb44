// The examples (examples/) natively and through HiveCL side by side (side_by_side.hpp): each
// example program runs in rounds alternating between the native platform and HiveCL
// (--platform), and the times it prints are compared: transfers and kernels from the host's
// clock, kernels from event profiling, and their sum.
//
//   bench-examples EXAMPLES_DIR "EXAMPLE [ARGS]"...
//   HIVECL_BENCH_EXAMPLES  replaces the list: "sgemm --size 4096;nbody --bodies 65536"
#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

struct Times {
  double transfer = 0, kernel = 0, profiled = 0;
};

// Runs "EXAMPLE ARGS" on one platform and reads its time line; a failed run ends the benchmark.
Times run_example(const std::string& directory, const std::string& command, const std::string& platform) {
  const std::string line = directory + "/" + command + " --platform '" + platform + "' 2>&1";
  FILE* output = popen(line.c_str(), "r");
  if (!output) die("starting " + command, 0);
  Times times;
  bool timed = false;
  std::string printed;
  std::array<char, 512> text{};
  while (std::fgets(text.data(), text.size(), output)) {
    printed += text.data();
    timed = timed || std::sscanf(text.data(), "time: transfer %lf ms, kernel %lf ms (profiled %lf ms)",
                                 &times.transfer, &times.kernel, &times.profiled) == 3;
  }
  if (pclose(output) != 0 || !timed) {
    std::fprintf(stderr, "%s", printed.c_str());
    die(command + " on " + platform, 1);
  }
  return times;
}

std::vector<std::string> example_commands(int argc, char** argv) {
  std::vector<std::string> commands(argv + 2, argv + argc);
  if (const char* list = std::getenv("HIVECL_BENCH_EXAMPLES")) {
    commands.clear();
    std::stringstream stream(list);
    for (std::string command; std::getline(stream, command, ';');)
      if (!command.empty()) commands.push_back(command);
  }
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench-examples EXAMPLES_DIR \"EXAMPLE [ARGS]\"...\n");
    return 2;
  }
  const std::string directory = argv[1];
  // CUDA's libOpenCL.so.1 cuts OCL_ICD_FILENAMES at its first ':' in this process's own
  // environment when it lists platforms: the examples would see the first library alone.
  const char* filenames = std::getenv("OCL_ICD_FILENAMES");
  const std::string icd_filenames = filenames ? filenames : "";
  SideBySide bench("examples");
  if (filenames) setenv("OCL_ICD_FILENAMES", icd_filenames.c_str(), 1);
  for (const std::string& command : example_commands(argc, argv)) {
    run_example(directory, command, bench.native.name);  // warm-up, not counted
    run_example(directory, command, bench.hivecl.name);
    std::array<std::vector<Times>, 2> runs;
    for (size_t round = 0; round < bench.rounds(); ++round)
      in_turn(
          round, [&] { runs[0].push_back(run_example(directory, command, bench.native.name)); },
          [&] { runs[1].push_back(run_example(directory, command, bench.hivecl.name)); });
    auto row = [&](const char* what, double (*pick)(const Times&)) {
      std::array<std::vector<double>, 2> values;
      for (int side = 0; side < 2; ++side)
        for (const Times& times : runs[side]) values[side].push_back(pick(times));
      bench.report(command + ": " + what, "ms", 0, values[0], values[1]);
    };
    row("transfer+kernel (host)", [](const Times& t) { return t.transfer + t.kernel; });
    row("transfer (host)", [](const Times& t) { return t.transfer; });
    row("kernel (host)", [](const Times& t) { return t.kernel; });
    row("kernel (events)", [](const Times& t) { return t.profiled; });
  }
  std::printf("ratio: HiveCL / native time (how many times slower)\n");
  return 0;
}
