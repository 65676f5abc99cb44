/* n-body (nbody_model.h) split over several devices, as a multi-GPU application does it: each
 * device has a context and an in-order queue of its own and moves its share of the bodies in
 * every step (a launch with a global offset); the new positions of every share are then
 * gathered on the host and sent to every device. The same steps then run on the first device
 * alone, and the two final states are compared: the arithmetic of a body is the same in both
 * runs, so they agree to rounding. Prints each run's time per step and the speed-up.
 *
 *   nbody_split [--platform NAME] [--device FIRST] [--devices K] [--bodies N] [--steps S]
 *
 * Devices FIRST to FIRST + K - 1 of the platform are used; K = 0 (the default): all from FIRST.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nbody_model.h"

static const float time_step = 0.01f, softening2 = 0.01f;
static const float tolerance = 1e-5f; /* a step moves bodies by about 1e-4 */

/* One device's part: its queue and buffers, and the bodies it moves. */
typedef struct {
  example_env env;
  cl_kernel kernel;
  cl_mem positions[2], velocities[2]; /* every body's state, in turns: step s reads [s % 2] */
  size_t first, count;
} share;

/* The state of every body on the host. */
typedef struct {
  float* positions;
  float* velocities;
} bodies;

static void open_share(share* part, cl_platform_id platform, cl_device_id device, size_t n) {
  const size_t bytes = 4 * n * sizeof(float);
  example_open_device(&part->env, platform, device);
  part->kernel = example_kernel(&part->env, nbody_kernel_source, NULL, "nbody_step");
  for (int turn = 0; turn < 2; ++turn) {
    part->positions[turn] = example_buffer(&part->env, CL_MEM_READ_WRITE, bytes);
    part->velocities[turn] = example_buffer(&part->env, CL_MEM_READ_WRITE, bytes);
  }
  const cl_uint count = (cl_uint)n;
  example_check(&part->env, clSetKernelArg(part->kernel, 4, sizeof count, &count), "clSetKernelArg");
  example_check(&part->env, clSetKernelArg(part->kernel, 5, sizeof time_step, &time_step), "clSetKernelArg");
  example_check(&part->env, clSetKernelArg(part->kernel, 6, sizeof softening2, &softening2), "clSetKernelArg");
}

static void close_share(share* part) {
  for (int turn = 0; turn < 2; ++turn) {
    clReleaseMemObject(part->positions[turn]);
    clReleaseMemObject(part->velocities[turn]);
  }
  clReleaseKernel(part->kernel);
  example_close(&part->env);
}

/* Queues one step of the part's bodies: from the state of turn `from` to the other. */
static void launch_step(share* part, int from) {
  const cl_kernel kernel = part->kernel;
  const example_env* env = &part->env;
  example_check(env, clSetKernelArg(kernel, 0, sizeof(cl_mem), &part->positions[from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 1, sizeof(cl_mem), &part->velocities[from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 2, sizeof(cl_mem), &part->positions[1 - from]), "clSetKernelArg");
  example_check(env, clSetKernelArg(kernel, 3, sizeof(cl_mem), &part->velocities[1 - from]), "clSetKernelArg");
  example_check(env, clEnqueueNDRangeKernel(env->queue, kernel, 1, &part->first, &part->count, NULL, 0, NULL, NULL),
                "clEnqueueNDRangeKernel");
}

/* Queues a read of the part's own bodies from `buffer` into the host array `host`. */
static void read_own(share* part, cl_mem buffer, float* host) {
  const size_t offset = 4 * part->first * sizeof(float), size = 4 * part->count * sizeof(float);
  example_check(&part->env,
                clEnqueueReadBuffer(part->env.queue, buffer, CL_FALSE, offset, size, (char*)host + offset, 0, NULL,
                                    NULL),
                "clEnqueueReadBuffer");
}

static void finish_all(share* parts, size_t count) {
  for (size_t i = 0; i < count; ++i) example_check(&parts[i].env, clFinish(parts[i].env.queue), "clFinish");
}

/* Moves `state` (n bodies) `steps` steps on the parts, which share the bodies out; returns the
 * host time of one step, the exchange of positions between the parts included. */
static double simulate(share* parts, size_t count, size_t n, long steps, bodies state) {
  const size_t bytes = 4 * n * sizeof(float);
  for (size_t i = 0; i < count; ++i) {
    parts[i].first = n * i / count;
    parts[i].count = n * (i + 1) / count - parts[i].first;
    example_write(&parts[i].env, parts[i].positions[0], bytes, state.positions);
    example_write(&parts[i].env, parts[i].velocities[0], bytes, state.velocities);
    launch_step(&parts[i], 0); /* warm-up: the runtime compiles for the launch; step 0 repeats it below */
  }
  finish_all(parts, count);
  /* The gathered positions alternate between two host arrays: a step's reads must not land in
   * the array that the previous step's writes may still be sending. */
  float* gathered[2] = {example_alloc(bytes), example_alloc(bytes)};
  const double started = example_now_ms();
  for (long step = 0; step < steps; ++step) {
    const int from = (int)(step % 2);
    for (size_t i = 0; i < count; ++i) {
      launch_step(&parts[i], from);
      if (count > 1) read_own(&parts[i], parts[i].positions[1 - from], gathered[from]);
    }
    if (count == 1) continue; /* one device needs no exchange */
    finish_all(parts, count);
    for (size_t i = 0; i < count; ++i)
      example_check(&parts[i].env,
                    clEnqueueWriteBuffer(parts[i].env.queue, parts[i].positions[1 - from], CL_FALSE, 0, bytes,
                                         gathered[from], 0, NULL, NULL),
                    "clEnqueueWriteBuffer");
  }
  finish_all(parts, count);
  const double per_step = (example_now_ms() - started) / (double)steps;
  for (size_t i = 0; i < count; ++i) {
    read_own(&parts[i], parts[i].positions[steps % 2], state.positions);
    read_own(&parts[i], parts[i].velocities[steps % 2], state.velocities);
  }
  finish_all(parts, count);
  free(gathered[0]);
  free(gathered[1]);
  return per_step;
}

/* The largest difference between two arrays of `count` floats (NaN counts as the largest). */
static float largest_difference(const float* a, const float* b, size_t count) {
  float largest = 0;
  for (size_t i = 0; i < count; ++i) {
    const float difference = fabsf(a[i] - b[i]);
    if (!(difference <= largest)) largest = difference;
  }
  return largest;
}

int main(int argc, char** argv) {
  long bodies_option = 4096, steps = 4, devices_option = 0, first_device = 0;
  const example_option options[] = {{"--bodies", &bodies_option, "number of bodies"},
                                    {"--steps", &steps, "time steps"},
                                    {"--devices", &devices_option, "devices used, from --device on (0: all)"}};
  example_env env;
  const cl_platform_id platform = example_parse(&env, argc, argv, options, 3, &first_device);
  example_device(&env, platform, first_device); /* exits, saying so, if there is no such device */
  const long available = (long)example_device_count(&env, platform) - first_device;
  const long count = devices_option ? devices_option : available;
  if (bodies_option < 1 || steps < 1 || count < 1 || count > available || count > bodies_option) {
    fprintf(stderr, "%s: needs at least one body and step, and 1 to %ld devices, no more than bodies\n", env.program,
            available);
    return 2;
  }
  const size_t n = (size_t)bodies_option, bytes = 4 * n * sizeof(float);
  printf("nbody_split: %zu bodies, %ld steps, %ld device(s)\n", n, steps, count);

  share* parts = calloc((size_t)count, sizeof *parts);
  if (!parts) return 1;
  for (long i = 0; i < count; ++i) open_share(&parts[i], platform, example_device(&env, platform, first_device + i), n);

  bodies split = {example_alloc(bytes), example_alloc(bytes)}, alone = {example_alloc(bytes), example_alloc(bytes)};
  nbody_initial_state(split.positions, split.velocities, n);
  memcpy(alone.positions, split.positions, bytes);
  memcpy(alone.velocities, split.velocities, bytes);
  const double split_ms = simulate(parts, (size_t)count, n, steps, split);
  for (long i = 0; i < count; ++i)
    printf("share: device %ld, bodies %zu to %zu\n", first_device + i, parts[i].first,
           parts[i].first + parts[i].count - 1);
  const double alone_ms = simulate(parts, 1, n, steps, alone);

  const float difference = fmaxf(largest_difference(split.positions, alone.positions, 4 * n),
                                 largest_difference(split.velocities, alone.velocities, 4 * n));
  double checksum = 0;
  for (size_t i = 0; i < 4 * n; ++i) checksum += split.positions[i];
  printf("time: 1 device %.3f ms per step, %ld device(s) %.3f ms per step, speed-up %.2f\n", alone_ms, count,
         split_ms, alone_ms / split_ms);
  const int correct = difference <= tolerance;
  printf("result: %s%ld device(s) against 1: largest difference %.3g (tolerance %.0e), checksum %.9g\n",
         correct ? "" : "WRONG, ", count, difference, tolerance, checksum);

  for (long i = 0; i < count; ++i) close_share(&parts[i]);
  free(parts);
  free(split.positions);
  free(split.velocities);
  free(alone.positions);
  free(alone.velocities);
  return correct ? 0 : 1;
}
