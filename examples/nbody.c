/* Gravitational n-body simulation (all pairs, nbody_model.h) on one device for a few steps,
 * checked against the same steps on the CPU.
 *
 *   nbody [--platform NAME] [--device INDEX] [--bodies N] [--steps S]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nbody_model.h"

static const float time_step = 0.01f, softening2 = 0.01f, tolerance = 1e-3f;

/* The largest difference of positions (which carry the velocities' errors too). */
static float largest_difference(const float* positions, const float* expected, size_t n) {
  float largest = 0;
  for (size_t i = 0; i < 4 * n; ++i) {
    const float difference = fabsf(positions[i] - expected[i]);
    if (!(difference <= largest)) largest = difference; /* NaN counts as the largest */
  }
  return largest;
}

static void reference_run(float* positions, float* velocities, size_t n, long steps) {
  const size_t bytes = 4 * n * sizeof(float);
  float* new_positions = example_alloc(bytes);
  float* new_velocities = example_alloc(bytes);
  for (long step = 0; step < steps; ++step) {
    nbody_reference_step(positions, velocities, new_positions, new_velocities, n, 0, n, time_step, softening2);
    memcpy(positions, new_positions, bytes);
    memcpy(velocities, new_velocities, bytes);
  }
  free(new_positions);
  free(new_velocities);
}

/* The state moves between the two buffer pairs: from pair `from` to the other. */
static void set_buffers(const example_env* env, cl_kernel kernel, const cl_mem* positions, const cl_mem* velocities,
                        int from) {
  example_check(env, clSetKernelArg(kernel, 0, sizeof(cl_mem), &positions[from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 1, sizeof(cl_mem), &velocities[from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 2, sizeof(cl_mem), &positions[1 - from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 3, sizeof(cl_mem), &velocities[1 - from]), "clSetKernelArg");
}

int main(int argc, char** argv) {
  long bodies = 4096, steps = 4;
  const example_option options[] = {{"--bodies", &bodies, "number of bodies"}, {"--steps", &steps, "time steps"}};
  example_env env;
  example_open(&env, argc, argv, options, 2);
  const cl_uint n = (cl_uint)bodies;
  const size_t bytes = 4 * (size_t)n * sizeof(float);
  const double flops = (double)NBODY_FLOPS_PER_INTERACTION * n * n * steps;
  printf("nbody: %u bodies, %ld steps, %.3f GFLOP\n", n, steps, flops / 1e9);

  float* positions = example_alloc(bytes);
  float* velocities = example_alloc(bytes);
  float* result = example_alloc(bytes);
  nbody_initial_state(positions, velocities, n);

  cl_kernel kernel = example_kernel(&env, nbody_kernel_source, NULL, "nbody_step");
  cl_mem position_buffers[2] = {example_buffer(&env, CL_MEM_READ_WRITE, bytes),
                                example_buffer(&env, CL_MEM_READ_WRITE, bytes)};
  cl_mem velocity_buffers[2] = {example_buffer(&env, CL_MEM_READ_WRITE, bytes),
                                example_buffer(&env, CL_MEM_READ_WRITE, bytes)};
  example_write(&env, position_buffers[0], bytes, positions);
  example_write(&env, velocity_buffers[0], bytes, velocities);
  example_check(&env, clSetKernelArg(kernel, 4, sizeof n, &n), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 5, sizeof time_step, &time_step), "clSetKernelArg");
  example_check(&env, clSetKernelArg(kernel, 6, sizeof softening2, &softening2), "clSetKernelArg");
  const size_t global = n;
  set_buffers(&env, kernel, position_buffers, velocity_buffers, 0);
  example_warm_up(&env, kernel, 1, &global, NULL); /* step 0, repeated below */
  example_kernels_begin(&env);
  for (long step = 0; step < steps; ++step) {
    set_buffers(&env, kernel, position_buffers, velocity_buffers, step % 2);
    example_launch(&env, kernel, 1, &global, NULL);
  }
  example_kernels_end(&env);
  example_read(&env, position_buffers[steps % 2], bytes, result);
  printf("nbody: %.2f GFLOP/s (profiled kernel time)\n", flops / (env.profiled_ms * 1e6));

  reference_run(positions, velocities, n, steps);
  const float difference = largest_difference(result, positions, n);
  double checksum = 0;
  for (size_t i = 0; i < 4 * (size_t)n; ++i) checksum += result[i];
  char text[256];
  snprintf(text, sizeof text, "largest position difference %.3g (tolerance %.0e), checksum %.9g", difference,
           tolerance, checksum);

  for (int i = 0; i < 2; ++i) {
    clReleaseMemObject(position_buffers[i]);
    clReleaseMemObject(velocity_buffers[i]);
  }
  clReleaseKernel(kernel);
  free(positions);
  free(velocities);
  free(result);
  return example_finish(&env, difference <= tolerance, text);
}
