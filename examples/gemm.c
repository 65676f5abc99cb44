/* Dense matrix product C = alpha A B + beta C of n x n matrices with a tiled OpenCL kernel
 * (local-memory tiles of 16 x 16), checked against a CPU reference on a sample of entries.
 * Built twice: sgemm (single precision) and dgemm (GEMM_DOUBLE, double precision; it reports
 * itself skipped on a device without double precision).
 *
 *   sgemm|dgemm [--platform NAME] [--device INDEX] [--size N]
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#ifdef GEMM_DOUBLE
typedef double real;
#define REAL_NAME "double"
#define REAL_EPSILON DBL_EPSILON
#define PRECISION "dgemm"
#else
typedef float real;
#define REAL_NAME "float"
#define REAL_EPSILON FLT_EPSILON
#define PRECISION "sgemm"
#endif

enum { TILE = 16, CHECKED_ENTRIES = 65536 };

static const char* kernel_source =
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#define TILE 16\n"
    "__kernel void gemm(uint n, REAL alpha, __global const REAL* a, __global const REAL* b, REAL beta,\n"
    "                   __global REAL* c) {\n"
    "  __local REAL tile_a[TILE][TILE], tile_b[TILE][TILE];\n"
    "  const uint row = get_global_id(1), col = get_global_id(0);\n"
    "  const uint local_row = get_local_id(1), local_col = get_local_id(0);\n"
    "  REAL sum = 0;\n"
    "  for (uint t = 0; t < n; t += TILE) {\n"
    "    tile_a[local_row][local_col] = a[row * n + t + local_col];\n"
    "    tile_b[local_row][local_col] = b[(t + local_row) * n + col];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint k = 0; k < TILE; ++k) sum += tile_a[local_row][k] * tile_b[k][local_col];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  c[row * n + col] = alpha * sum + beta * c[row * n + col];\n"
    "}\n";

/* Compares entries of a sample against a double-precision reference; the bound grows with n
 * as rounding errors of a sum of n products do. */
static double worst_error(size_t n, real alpha, const real* a, const real* b, real beta, const real* c_in,
                          const real* c_out, size_t* checked, size_t* wrong) {
  const size_t count = n * n, step = count / CHECKED_ENTRIES + 1;
  double worst = 0;
  for (size_t index = 0; index < count; index += step) {
    const size_t row = index / n, col = index % n;
    double sum = 0, magnitude = 0;
    for (size_t k = 0; k < n; ++k) {
      sum += (double)a[row * n + k] * b[k * n + col];
      magnitude += fabs((double)a[row * n + k] * b[k * n + col]);
    }
    const double expected = alpha * sum + beta * c_in[index];
    const double bound = 4.0 * (double)n * REAL_EPSILON * (fabs(alpha) * magnitude + fabs(beta * c_in[index]));
    const double error = fabs(c_out[index] - expected);
    ++*checked;
    if (error > bound || error != error) ++*wrong;
    if (error > worst) worst = error;
  }
  return worst;
}

int main(int argc, char** argv) {
  long size = 512;
  const example_option options[] = {{"--size", &size, "matrix order (rounded up to a multiple of 16)"}};
  example_env env;
  example_open(&env, argc, argv, options, 1);
#ifdef GEMM_DOUBLE
  if (!example_has_fp64(&env)) {
    return example_finish(&env, 1, "skipped, the device has no double precision");
  }
#endif
  const cl_uint n = (cl_uint)((size + TILE - 1) / TILE * TILE);
  const size_t count = (size_t)n * n, bytes = count * sizeof(real);
  const real alpha = 1.5, beta = 0.5;
  printf(PRECISION ": n=%u, %.3f GFLOP\n", n, 2.0 * n * n * n / 1e9);

  real* a = example_alloc(bytes);
  real* b = example_alloc(bytes);
  real* c_in = example_alloc(bytes);
  real* c_out = example_alloc(bytes);
  unsigned seed = 1;
  for (size_t i = 0; i < count; ++i) {
    a[i] = example_random(&seed);
    b[i] = example_random(&seed);
    c_in[i] = example_random(&seed);
  }

  cl_kernel kernel = example_kernel(&env, kernel_source, "-D REAL=" REAL_NAME, "gemm");
  cl_mem buffer_a = example_buffer(&env, CL_MEM_READ_ONLY, bytes);
  cl_mem buffer_b = example_buffer(&env, CL_MEM_READ_ONLY, bytes);
  cl_mem buffer_c = example_buffer(&env, CL_MEM_READ_WRITE, bytes);
  example_write(&env, buffer_a, bytes, a);
  example_write(&env, buffer_b, bytes, b);
  example_check(&env, clSetKernelArg(kernel, 0, sizeof n, &n), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 1, sizeof alpha, &alpha), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 2, sizeof buffer_a, &buffer_a), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 3, sizeof buffer_b, &buffer_b), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 4, sizeof beta, &beta), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 5, sizeof buffer_c, &buffer_c), "clSetKernelArg");
  const size_t global[2] = {n, n}, local[2] = {TILE, TILE};
  example_warm_up(&env, kernel, 2, global, local); /* on C's garbage: C is written after it */
  example_write(&env, buffer_c, bytes, c_in);
  example_kernels_begin(&env);
  example_launch(&env, kernel, 2, global, local);
  example_kernels_end(&env);
  example_read(&env, buffer_c, bytes, c_out);
  printf(PRECISION ": %.2f GFLOP/s (profiled kernel time)\n", 2.0 * n * n * n / (env.profiled_ms * 1e6));

  size_t checked = 0, wrong = 0;
  const double worst = worst_error(n, alpha, a, b, beta, c_in, c_out, &checked, &wrong);
  double checksum = 0;
  for (size_t i = 0; i < count; ++i) checksum += c_out[i];
  char result[256];
  snprintf(result, sizeof result, "%zu of %zu sampled entries wrong, largest error %.3g, checksum %.9g", wrong,
           checked, worst, checksum);

  clReleaseMemObject(buffer_a);
  clReleaseMemObject(buffer_b);
  clReleaseMemObject(buffer_c);
  clReleaseKernel(kernel);
  free(a);
  free(b);
  free(c_in);
  free(c_out);
  return example_finish(&env, wrong == 0, result);
}
