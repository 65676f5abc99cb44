#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "catch.hpp"
#include "corpus.hpp"
#include "kernels_parser.hpp"

using namespace hivecl::kernels_parser;

namespace {

Kernel only_kernel(const Program& program) {
  REQUIRE(program.certain);
  REQUIRE(program.kernels.size() == 1);
  REQUIRE(program.kernels[0].certain);
  return program.kernels[0];
}

std::vector<ArgKind> kinds(const Kernel kernel) {
  std::vector<ArgKind> result;
  for (const Argument& argument : kernel.arguments) result.push_back(argument.kind);
  return result;
}

const Program& corpus_program(const char* name) {
  static std::map<std::string, Program> parsed;
  for (const auto& source : corpus::sources())
    if (source.name == std::string(name)) return parsed[name] = parse(source.text, source.options);
  FAIL("no corpus source " << name);
  return parsed[name];
}

using K = ArgKind;

}  // namespace

TEST_CASE("SGEMM tiles: attribute with a macro, const by-value ints, const global pointers", "[kernels-parser]") {
  const Kernel sgemm = only_kernel(corpus_program("sgemm tiles"));
  CHECK(sgemm.name == "sgemm");
  CHECK(kinds(sgemm) == std::vector{K::by_value, K::by_value, K::by_value, K::global_memory, K::global_memory, K::global_memory});
  CHECK(sgemm.arguments[0].size == 4u);
  CHECK(sgemm.arguments[3].type_name == "float*");
  CHECK(sgemm.arguments[5].name == "C");
}

TEST_CASE("n-body: spellings without underscores, local memory, unsigned int", "[kernels-parser]") {
  const Kernel nbody = only_kernel(corpus_program("n-body"));
  CHECK(kinds(nbody) == std::vector{K::global_memory, K::global_memory, K::global_memory, K::local_memory,
                                    K::by_value, K::by_value, K::by_value});
  CHECK(nbody.arguments[0].type_name == "float4*");
  CHECK(nbody.arguments[4].type_name == "uint");
  CHECK(nbody.arguments[4].size == 4u);
}

TEST_CASE("reduction: a typedef chosen by -D, a conditional on an extension macro that changes no signature",
          "[kernels-parser]") {
  const Kernel reduce = only_kernel(corpus_program("reduction"));
  CHECK(kinds(reduce) == std::vector{K::global_memory, K::global_memory, K::local_memory, K::by_value});
  CHECK(reduce.arguments[0].type_name == "real_t*");
  const Program with_double = parse(corpus::sources()[2].text, "-DUSE_DOUBLE");
  REQUIRE(with_double.certain);
  CHECK(with_double.kernels[0].arguments[0].type_name == "real_t*");
}

TEST_CASE("Smith-Waterman: eight arguments, a typedef'd struct by value", "[kernels-parser]") {
  const Kernel sw = only_kernel(corpus_program("smith-waterman"));
  REQUIRE(sw.arguments.size() == 8);
  CHECK(sw.arguments[2].kind == K::global_memory);
  CHECK(sw.arguments[7].kind == K::by_value);
  CHECK(sw.arguments[7].type_name == "Scores");
  CHECK(sw.arguments[7].size == 8u);
}

TEST_CASE("image filter: images with access qualifiers, a sampler, constant memory", "[kernels-parser]") {
  const Kernel blur = only_kernel(corpus_program("image filter"));
  CHECK(kinds(blur) == std::vector{K::image, K::image, K::sampler, K::constant_memory, K::by_value});
  CHECK(blur.arguments[0].access == Access::read_only);
  CHECK(blur.arguments[1].access == Access::write_only);
  CHECK(blur.arguments[0].type_name == "image2d_t");
}

TEST_CASE("structs by value follow OpenCL C's alignment rules", "[kernels-parser]") {
  const Kernel move = only_kernel(corpus_program("structs by value"));
  CHECK(move.arguments[0].type_name == "struct Particle");
  CHECK(move.arguments[0].size == 32u);  // float3 (16) + char at 16 + double at 24
  CHECK(move.arguments[1].size == 5u);   // packed
  CHECK(move.arguments[2].size == 16u);  // a union: its largest member
  CHECK(move.arguments[3].size == 8u);
  CHECK(move.arguments[4].kind == K::global_memory);
}

TEST_CASE("vector sizes: three components take four", "[kernels-parser]") {
  const Kernel k = only_kernel(parse("kernel void k(char3 a, short3 b, float3 c, double3 d, uchar16 e, half2 f) {}"));
  std::vector<uint64_t> sizes;
  for (const Argument& a : k.arguments) sizes.push_back(a.size.value_or(0));
  CHECK(sizes == std::vector<uint64_t>{4, 8, 16, 32, 16, 4});
}

TEST_CASE("comments, line continuations and a kernel declared across lines", "[kernels-parser]") {
  const Kernel k = only_kernel(parse("/* kernel void fake(int x) {} */\n"
                                      "// kernel void also_fake(global int* p) {}\n"
                                      "__kernel\nvoid\nsplit(\n  __global /* between */ int *\\\n a,\n"
                                      "  // a comment in the list\n  int b\n)\n{ a[0] = b; }\n"));
  CHECK(k.name == "split");
  CHECK(kinds(k) == std::vector{K::global_memory, K::by_value});
}

TEST_CASE("object- and function-like macros, #, ##, variadic, #undef", "[kernels-parser]") {
  const Kernel k = only_kernel(parse(R"(
#define PTR(space, type) space type*
#define NAME(a, b) a##b
#define FIRST(x, ...) x
#define T float
#undef T
#define T int
#define F(x) G
#define G(y) y
__kernel void NAME(my, kernel)(PTR(__global, T) out, FIRST(__local float* tmp, ignored), F(1)(uint) n) {}
)"));
  CHECK(k.name == "mykernel");
  CHECK(kinds(k) == std::vector{K::global_memory, K::local_memory, K::by_value});
  CHECK(k.arguments[0].type_name == "int*");
  CHECK(k.arguments[2].size == 4u);
}

TEST_CASE("#if, #elif, #else with defined() and integer expressions", "[kernels-parser]") {
  const std::string source = R"(
#if WIDTH * 2 > 8 && defined(WIDE)
kernel void wide(global float* a) {}
#elif WIDTH == 4 || (1 << 3) != 8
kernel void four(local float* a) {}
#else
kernel void other(int a) {}
#endif
)";
  CHECK(only_kernel(parse(source, "-D WIDTH=8 -DWIDE")).name == "wide");
  CHECK(only_kernel(parse(source, "-DWIDTH=4")).name == "four");
  CHECK(only_kernel(parse(source, "-DWIDTH=2")).name == "other");
}

TEST_CASE("a conditional on a device macro around a signature is uncertain", "[kernels-parser]") {
  const Program program = parse(R"(
#if __OPENCL_VERSION__ >= 200
typedef double real;
#else
typedef float real;
#endif
kernel void k(real x) {}
)");
  CHECK_FALSE(program.certain);
  CHECK(program.certain_kernel("k") == nullptr);
  // Decided by the other operand: certain.
  CHECK(parse("#if 0 && __OPENCL_VERSION__ >= 200\n#define X\n#endif\nkernel void k(int x) {}").certain);
}

TEST_CASE("invalid signatures are never certain", "[kernels-parser]") {
  const Program program = parse("kernel void pp(global int** p) {}\n"
                                "kernel void priv(int* p) {}\n"
                                "kernel void local_value(local int x) {}\n"
                                "kernel void unknown(mystery_t x) {}\n"
                                "kernel void fine(global int* p) {}\n");
  REQUIRE(program.kernels.size() == 5);
  for (size_t i = 0; i < 4; ++i) CHECK_FALSE(program.kernels[i].certain);
  CHECK(program.certain_kernel("fine") != nullptr);
  CHECK(program.kernels[0].uncertainty.find("pointer to a pointer") != std::string::npos);
}

TEST_CASE("an #include it cannot read makes the program uncertain; one in a -I directory is read",
          "[kernels-parser]") {
  CHECK_FALSE(parse("#include \"missing.h\"\nkernel void k(int x) {}").certain);
  const auto directory = std::filesystem::temp_directory_path() / "kernels-parser-test";
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "types.h") << "typedef __global float* fptr;\n#define N 3\n";
  const Program program = parse("#include \"types.h\"\nkernel void k(fptr p, int a[N]) {}\nkernel void j(fptr p) {}",
                                "-I " + directory.string());
  CHECK(program.certain);
  CHECK(program.certain_kernel("j") != nullptr);
  CHECK(program.certain_kernel("j")->arguments[0].kind == K::global_memory);
  CHECK(program.certain_kernel("k") == nullptr);  // an array parameter
  std::filesystem::remove_all(directory);
}

TEST_CASE("an #include of a device, a pipe or a directory makes the program uncertain, and ends", "[kernels-parser]") {
  CHECK_FALSE(parse("#include \"zero\"\nkernel void k(int x) {}", "-I /dev").certain);  // endless
  CHECK_FALSE(parse("#include \"dev\"\nkernel void k(int x) {}", "-I /").certain);
  const auto directory = std::filesystem::temp_directory_path() / "kernels-parser-fifo";
  std::filesystem::create_directories(directory);
  REQUIRE(mkfifo((directory / "fifo.h").c_str(), 0600) == 0);  // no writer: opening it would wait for ever
  CHECK_FALSE(parse("#include \"fifo.h\"\nkernel void k(int x) {}", "-I " + directory.string()).certain);
  std::filesystem::remove_all(directory);
}

TEST_CASE("clCompileProgram's embedded headers are found by include name, before the -I directories",
          "[kernels-parser]") {
  const Headers headers{{"dir/types.h", "typedef __local float* lptr;\n#include \"more.h\"\n"},
                        {"more.h", "#define SCALAR int\n"}};
  const Program program = parse({"#include \"dir/types.h\"\nkernel void k(lptr p, SCALAR n) {}"}, "", headers);
  CHECK(kinds(only_kernel(program)) == std::vector{K::local_memory, K::by_value});
  CHECK_FALSE(parse({"#include \"other.h\"\nkernel void k(int n) {}"}, "", headers).certain);
}

TEST_CASE("prototypes, helper functions and kernels in braces are not listed", "[kernels-parser]") {
  const Program program = parse("kernel void later(global int* p);\n"
                                "int helper(int x) { return x; }\n"
                                "__attribute__((vec_type_hint(float4))) kernel void later(global int* p) { p[0] = helper(1); }\n");
  const Kernel later = only_kernel(program);
  CHECK(later.name == "later");
  CHECK(parse("kernel void none(void) {}").kernels.at(0).arguments.empty());
}

TEST_CASE("pipes and read_write images", "[kernels-parser]") {
  const Kernel k = only_kernel(parse("kernel void p(read_only pipe int in, read_write image3d_t volume) {}"));
  CHECK(kinds(k) == std::vector{K::pipe, K::image});
  CHECK(k.arguments[1].access == Access::read_write);
}

TEST_CASE("runaway macros and deep nesting end uncertain, without exhausting the stack or memory",
          "[kernels-parser]") {
  std::string doubling;
  for (int i = 0; i < 40; ++i)
    doubling += "#define M" + std::to_string(i) + " M" + std::to_string(i + 1) + " M" + std::to_string(i + 1) + "\n";
  CHECK_FALSE(parse(doubling + "M0\nkernel void k(int x) {}").certain);
  std::string chain;
  for (int i = 0; i < 1000; ++i) chain += "#define C" + std::to_string(i) + " C" + std::to_string(i + 1) + "\n";
  CHECK_FALSE(parse(chain + "C0\nkernel void k(int x) {}").certain);
  std::string nested;
  for (int i = 0; i < 5000; ++i) nested += "F(";
  nested += "1" + std::string(5000, ')');
  CHECK_FALSE(parse("#define F(x) x\n" + nested + "\nkernel void k(int x) {}").certain);
  CHECK_FALSE(parse("#if " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n#endif\n").certain);
  std::string structs;
  for (int i = 0; i < 5000; ++i) structs += "struct { ";
  CHECK_FALSE(parse("typedef " + structs + "int x;" + std::string(5000, '}') + " T;\nkernel void k(T t) {}").certain);
}
