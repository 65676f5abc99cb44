/* Smith-Waterman local alignment of two random DNA sequences (linear gap penalty): the score
 * matrix is filled one anti-diagonal per kernel launch (cells of an anti-diagonal depend only
 * on the two before it), so the run makes 2n - 1 launches, each with a new argument. The
 * whole matrix is checked against the CPU's.
 *
 *   smith_waterman [--platform NAME] [--device INDEX] [--length N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { MATCH = 2, MISMATCH = -1, GAP = 1 };
/* One work-group size for every launch, so that runtimes compile the kernel once. */
enum { GROUP = 64 };

static const char* kernel_source =
    "__kernel void diagonal(__global const uchar* a, __global const uchar* b, __global int* h, uint n, uint d) {\n"
    "  const uint i = (d > n ? d - n : 1u) + get_global_id(0), j = d - i, w = n + 1;\n"
    "  if (i > n || j < 1 || j > n) return; /* past the diagonal's end: the launch is rounded up */\n"
    "  const int diagonal = h[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? MATCH : MISMATCH);\n"
    "  const int best_gap = max(h[(i - 1) * w + j], h[i * w + j - 1]) - GAP;\n"
    "  h[i * w + j] = max(0, max(diagonal, best_gap));\n"
    "}\n";

static int max_int(int a, int b) { return a > b ? a : b; }

static void reference_scores(const unsigned char* a, const unsigned char* b, int* h, size_t n) {
  const size_t w = n + 1;
  memset(h, 0, w * w * sizeof *h);
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= n; ++j) {
      const int diagonal = h[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? MATCH : MISMATCH);
      h[i * w + j] = max_int(0, max_int(diagonal, max_int(h[(i - 1) * w + j], h[i * w + j - 1]) - GAP));
    }
}

static void random_sequence(unsigned char* sequence, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    sequence[i] = (unsigned char)"ACGT"[seed >> 30];
  }
}

int main(int argc, char** argv) {
  long length = 1024;
  const example_option options[] = {{"--length", &length, "length of each sequence"}};
  example_env env;
  example_open(&env, argc, argv, options, 1);
  const cl_uint n = (cl_uint)(length > 0 ? length : 1);
  const size_t cells = ((size_t)n + 1) * (n + 1), matrix_bytes = cells * sizeof(int);
  printf("smith_waterman: two sequences of %u, %u kernel launches\n", n, 2 * n - 1);

  unsigned char* a = example_alloc(n);
  unsigned char* b = example_alloc(n);
  int* scores = example_alloc(matrix_bytes);
  int* expected = example_alloc(matrix_bytes);
  memset(scores, 0, matrix_bytes);
  random_sequence(a, n, 11);
  random_sequence(b, n, 23);

  char build_options[96];
  snprintf(build_options, sizeof build_options, "-D MATCH=%d -D MISMATCH=%d -D GAP=%d", MATCH, MISMATCH, GAP);
  cl_kernel kernel = example_kernel(&env, kernel_source, build_options, "diagonal");
  cl_mem buffer_a = example_buffer(&env, CL_MEM_READ_ONLY, n);
  cl_mem buffer_b = example_buffer(&env, CL_MEM_READ_ONLY, n);
  cl_mem buffer_h = example_buffer(&env, CL_MEM_READ_WRITE, matrix_bytes);
  example_write(&env, buffer_a, n, a);
  example_write(&env, buffer_b, n, b);
  example_write(&env, buffer_h, matrix_bytes, scores); /* zeros: the first row and column */
  example_check(&env, clSetKernelArg(kernel, 0, sizeof buffer_a, &buffer_a), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 1, sizeof buffer_b, &buffer_b), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 2, sizeof buffer_h, &buffer_h), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 3, sizeof n, &n), "clSetKernelArg");
  const size_t local = GROUP;
  for (cl_uint d = 2; d <= 2 * n; ++d) {
    const size_t cells_on_diagonal = d <= n + 1 ? d - 1 : 2 * n + 1 - d;
    const size_t global = (cells_on_diagonal + GROUP - 1) / GROUP * GROUP;
    example_check(&env, clSetKernelArg(kernel, 4, sizeof d, &d), "clSetKernelArg");
    if (d == 2) {
      example_warm_up(&env, kernel, 1, &global, &local); /* the first cell, computed again below */
      example_kernels_begin(&env);
    }
    example_launch(&env, kernel, 1, &global, &local);
  }
  example_kernels_end(&env);
  example_read(&env, buffer_h, matrix_bytes, scores);

  reference_scores(a, b, expected, n);
  size_t wrong = 0;
  int best = 0;
  for (size_t i = 0; i < cells; ++i) {
    wrong += scores[i] != expected[i];
    best = max_int(best, scores[i]);
  }
  char text[256];
  snprintf(text, sizeof text, "%zu of %zu cells wrong, best local alignment score %d", wrong, cells, best);

  clReleaseMemObject(buffer_a);
  clReleaseMemObject(buffer_b);
  clReleaseMemObject(buffer_h);
  clReleaseKernel(kernel);
  free(a);
  free(b);
  free(scores);
  free(expected);
  return example_finish(&env, wrong == 0, text);
}
