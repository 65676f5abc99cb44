#include "nbody_model.h"

#include <math.h>

#include "common.h"

const char* const nbody_kernel_source =
    "__kernel void nbody_step(__global const float4* pos, __global const float4* vel, __global float4* new_pos,\n"
    "                         __global float4* new_vel, uint n, float dt, float softening2) {\n"
    "  const size_t i = get_global_id(0);\n"
    "  const float4 body = pos[i];\n"
    "  float3 acceleration = (float3)(0.0f);\n"
    "  for (uint j = 0; j < n; ++j) {\n"
    "    const float4 other = pos[j];\n"
    "    const float3 d = other.xyz - body.xyz;\n"
    "    const float inverse = rsqrt(dot(d, d) + softening2);\n"
    "    acceleration += d * (other.w * inverse * inverse * inverse);\n"
    "  }\n"
    "  float4 velocity = vel[i];\n"
    "  velocity.xyz += acceleration * dt;\n"
    "  new_vel[i] = velocity;\n"
    "  new_pos[i] = (float4)(body.xyz + velocity.xyz * dt, body.w);\n"
    "}\n";

void nbody_initial_state(float* positions, float* velocities, size_t n) {
  unsigned seed = 7;
  for (size_t i = 0; i < n; ++i) {
    for (int axis = 0; axis < 3; ++axis) {
      positions[4 * i + axis] = example_random(&seed);
      velocities[4 * i + axis] = 0;
    }
    positions[4 * i + 3] = 1.0f / (float)n;
    velocities[4 * i + 3] = 0;
  }
}

void nbody_reference_step(const float* positions, const float* velocities, float* new_positions,
                          float* new_velocities, size_t n, size_t first, size_t count, float dt, float softening2) {
  for (size_t i = first; i < first + count; ++i) {
    const float* body = positions + 4 * i;
    float acceleration[3] = {0, 0, 0};
    for (size_t j = 0; j < n; ++j) {
      const float* other = positions + 4 * j;
      const float d[3] = {other[0] - body[0], other[1] - body[1], other[2] - body[2]};
      const float inverse = 1.0f / sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + softening2);
      for (int axis = 0; axis < 3; ++axis) acceleration[axis] += d[axis] * (other[3] * inverse * inverse * inverse);
    }
    for (int axis = 0; axis < 3; ++axis) {
      new_velocities[4 * i + axis] = velocities[4 * i + axis] + acceleration[axis] * dt;
      new_positions[4 * i + axis] = body[axis] + new_velocities[4 * i + axis] * dt;
    }
    new_velocities[4 * i + 3] = velocities[4 * i + 3];
    new_positions[4 * i + 3] = body[3];
  }
}
