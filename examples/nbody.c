/* Gravitational n-body simulation (all pairs, nbody_model.h) on one device for a few steps;
 * the last step is checked on the CPU for a sample of bodies. The time includes reading back
 * the state before the last step for that check.
 *
 *   nbody [--platform NAME] [--device INDEX] [--bodies N] [--steps S]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nbody_model.h"

static const float time_step = 0.01f, softening2 = 0.01f, tolerance = 1e-5f; /* a step moves bodies by about 1e-4 */

enum { CHECKED_BODIES = 2048 };

/* Checks the last step: a sample of bodies moved on the CPU from the device's state before it.
 * (Every step runs the same kernel; a full CPU run would cost n^2 per step on the host.)
 * Returns the largest difference of the new positions, which carry the velocities' errors. */
static float last_step_difference(const float* before_positions, const float* before_velocities,
                                  const float* after_positions, size_t n) {
  float expected_position[4], expected_velocity[4], largest = 0;
  const size_t stride = n / CHECKED_BODIES + 1;
  float* positions = example_alloc(4 * n * sizeof(float));
  float* velocities = example_alloc(4 * n * sizeof(float));
  for (size_t body = 0; body < n; body += stride) {
    /* The reference writes body `body` of its output arrays: give it room for just that one. */
    nbody_reference_step(before_positions, before_velocities, positions, velocities, n, body, 1, time_step, softening2);
    memcpy(expected_position, positions + 4 * body, sizeof expected_position);
    memcpy(expected_velocity, velocities + 4 * body, sizeof expected_velocity);
    for (int axis = 0; axis < 4; ++axis) {
      const float difference = fabsf(after_positions[4 * body + axis] - expected_position[axis]);
      if (!(difference <= largest)) largest = difference; /* NaN counts as the largest */
    }
  }
  free(positions);
  free(velocities);
  return largest;
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
  if (bodies < 1 || steps < 1) {
    fprintf(stderr, "nbody: needs at least one body and one step\n");
    return 2;
  }
  const cl_uint n = (cl_uint)bodies;
  const size_t bytes = 4 * (size_t)n * sizeof(float);
  const double flops = (double)NBODY_FLOPS_PER_INTERACTION * n * n * steps;
  printf("nbody: %u bodies, %ld steps, %.3f GFLOP\n", n, steps, flops / 1e9);

  float* positions = example_alloc(bytes);
  float* velocities = example_alloc(bytes);
  float* result = example_alloc(bytes);
  float* before_positions = example_alloc(bytes); /* the state before the last step */
  float* before_velocities = example_alloc(bytes);
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
  example_read(&env, position_buffers[(steps + 1) % 2], bytes, before_positions);
  example_read(&env, velocity_buffers[(steps + 1) % 2], bytes, before_velocities);
  printf("nbody: %.2f GFLOP/s (profiled kernel time)\n", flops / (env.profiled_ms * 1e6));

  const float difference = last_step_difference(before_positions, before_velocities, result, n);
  double checksum = 0;
  for (size_t i = 0; i < 4 * (size_t)n; ++i) checksum += result[i];
  char text[256];
  snprintf(text, sizeof text, "last step: largest position difference %.3g (tolerance %.0e), checksum %.9g", difference,
           tolerance, checksum);

  for (int i = 0; i < 2; ++i) {
    clReleaseMemObject(position_buffers[i]);
    clReleaseMemObject(velocity_buffers[i]);
  }
  clReleaseKernel(kernel);
  free(positions);
  free(velocities);
  free(result);
  free(before_positions);
  free(before_velocities);
  return example_finish(&env, difference <= tolerance, text);
}
