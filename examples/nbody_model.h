/* The n-body model of examples/nbody, apart from its host program so that other programs (a
 * run split over several devices) can reuse the kernel and the reference: bodies are float4
 * (x, y, z, mass) positions and float4 (vx, vy, vz, unused) velocities; one step moves bodies
 * [first, first + count) under the gravity of all n bodies (softened, G = 1), Euler
 * integration. The kernel moves body get_global_id(0): launch it with a global offset of
 * `first` and a global size of `count`. */
#ifndef HIVECL_EXAMPLES_NBODY_MODEL_H
#define HIVECL_EXAMPLES_NBODY_MODEL_H

#include <stddef.h>

/* Kernel "nbody_step"(pos, vel, new_pos, new_vel, uint n, float dt, float softening2). */
extern const char* const nbody_kernel_source;

enum { NBODY_FLOPS_PER_INTERACTION = 20 };

/* Bodies in a unit cube at rest, total mass 1; arrays of 4 * n floats. */
void nbody_initial_state(float* positions, float* velocities, size_t n);

void nbody_reference_step(const float* positions, const float* velocities, float* new_positions,
                          float* new_velocities, size_t n, size_t first, size_t count, float dt, float softening2);

#endif
