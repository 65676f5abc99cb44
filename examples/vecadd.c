/* Vector addition with plain OpenCL: runs on whatever platform and device the command
 * line picks, natively or through HiveCL.
 *
 *   vecadd [--platform NAME] [--device INDEX] [--size N]
 *
 * NAME is matched against the start of CL_PLATFORM_NAME ("HiveCL", "Portable", "NVIDIA");
 * without it the first platform is used. On a HiveCL device the node it runs on is shown.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

static const char* kernel_source =
    "__kernel void vecadd(__global const float* a, __global const float* b, __global float* c, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

int main(int argc, char** argv) {
  long size = 1L << 20;
  const example_option options[] = {{"--size", &size, "number of elements"}};
  example_env env;
  example_open(&env, argc, argv, options, 1);
  const cl_uint n = (cl_uint)size;
  const size_t bytes = (size_t)n * sizeof(float);
  float* a = example_alloc(bytes);
  float* b = example_alloc(bytes);
  float* c = example_alloc(bytes);
  for (cl_uint i = 0; i < n; ++i) {
    a[i] = (float)i;
    b[i] = (float)(2 * (i % 1000));
  }

  cl_kernel kernel = example_kernel(&env, kernel_source, NULL, "vecadd");
  cl_mem buffer_a = example_buffer(&env, CL_MEM_READ_ONLY, bytes);
  cl_mem buffer_b = example_buffer(&env, CL_MEM_READ_ONLY, bytes);
  cl_mem buffer_c = example_buffer(&env, CL_MEM_WRITE_ONLY, bytes);
  example_write(&env, buffer_a, bytes, a);
  example_write(&env, buffer_b, bytes, b);
  example_check(&env, clSetKernelArg(kernel, 0, sizeof buffer_a, &buffer_a), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 1, sizeof buffer_b, &buffer_b), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 2, sizeof buffer_c, &buffer_c), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 3, sizeof n, &n), "clSetKernelArg");
  const size_t global = ((size_t)n + 63) / 64 * 64;
  example_kernels_begin(&env);
  example_launch(&env, kernel, 1, &global, NULL);
  example_kernels_end(&env);
  example_read(&env, buffer_c, bytes, c);

  cl_uint wrong = 0;
  double checksum = 0;
  for (cl_uint i = 0; i < n; ++i) {
    if (c[i] != a[i] + b[i]) ++wrong;
    checksum += c[i];
  }
  char text[256];
  snprintf(text, sizeof text, "%u elements, %u wrong, checksum %.1f", n, wrong, checksum);

  clReleaseMemObject(buffer_a);
  clReleaseMemObject(buffer_b);
  clReleaseMemObject(buffer_c);
  clReleaseKernel(kernel);
  free(a);
  free(b);
  free(c);
  return example_finish(&env, wrong == 0, text);
}
