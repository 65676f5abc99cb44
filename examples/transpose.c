/* Matrix transpose through local-memory tiles (16 x 16, padded against bank conflicts),
 * repeated to give the kernel measurable time; checked element by element.
 *
 *   transpose [--platform NAME] [--device INDEX] [--size N] [--repeat R]
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

enum { TILE = 16 };

static const char* kernel_source =
    "#define TILE 16\n"
    "__kernel void transpose(__global const float* in, __global float* out, uint n) {\n"
    "  __local float tile[TILE][TILE + 1];\n"
    "  const uint x = get_global_id(0), y = get_global_id(1);\n"
    "  const uint lx = get_local_id(0), ly = get_local_id(1);\n"
    "  if (x < n && y < n) tile[ly][lx] = in[y * n + x];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  const uint out_x = get_group_id(1) * TILE + lx, out_y = get_group_id(0) * TILE + ly;\n"
    "  if (out_x < n && out_y < n) out[out_y * n + out_x] = tile[lx][ly];\n"
    "}\n";

int main(int argc, char** argv) {
  long size = 2048, repeat = 10;
  const example_option options[] = {{"--size", &size, "matrix order"},
                                    {"--repeat", &repeat, "kernel launches (each transposes the whole matrix)"}};
  example_env env;
  example_open(&env, argc, argv, options, 2);
  const cl_uint n = (cl_uint)size;
  const size_t count = (size_t)n * n, bytes = count * sizeof(float);
  printf("transpose: n=%u, %zu bytes, %ld launches\n", n, bytes, repeat);

  float* matrix = example_alloc(bytes);
  float* transposed = example_alloc(bytes);
  for (size_t i = 0; i < count; ++i) matrix[i] = (float)(i % 1000003);

  cl_kernel kernel = example_kernel(&env, kernel_source, NULL, "transpose");
  cl_mem in = example_buffer(&env, CL_MEM_READ_ONLY, bytes);
  cl_mem out = example_buffer(&env, CL_MEM_WRITE_ONLY, bytes);
  example_write(&env, in, bytes, matrix);
  example_check(&env, clSetKernelArg(kernel, 0, sizeof in, &in), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 1, sizeof out, &out), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 2, sizeof n, &n), "clSetKernelArg");
  const size_t padded = ((size_t)n + TILE - 1) / TILE * TILE;
  const size_t global[2] = {padded, padded}, local[2] = {TILE, TILE};
  example_warm_up(&env, kernel, 2, global, local);
  example_kernels_begin(&env);
  for (long i = 0; i < repeat; ++i) example_launch(&env, kernel, 2, global, local);
  example_kernels_end(&env);
  example_read(&env, out, bytes, transposed);
  if (env.profiled_ms > 0)
    printf("transpose: %.2f GB/s (profiled kernel time, read + write)\n", 2.0 * bytes * repeat / (env.profiled_ms * 1e6));

  size_t wrong = 0;
  double checksum = 0;
  for (size_t row = 0; row < n; ++row)
    for (size_t col = 0; col < n; ++col) {
      wrong += transposed[col * n + row] != matrix[row * n + col];
      checksum += transposed[col * n + row] * (double)((row + col) % 7);
    }
  char text[256];
  snprintf(text, sizeof text, "%zu of %zu elements wrong, checksum %.9g", wrong, count, checksum);

  clReleaseMemObject(in);
  clReleaseMemObject(out);
  clReleaseKernel(kernel);
  free(matrix);
  free(transposed);
  return example_finish(&env, wrong == 0, text);
}
