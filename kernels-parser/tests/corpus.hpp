// Kernels in the shapes real programs use (SGEMM tiles, n-body, reductions with local memory,
// Smith-Waterman, image filters with samplers, structs by value), each with its build options.
// The unit tests check the parser's answers on them; the device test checks those answers
// against PoCL's clGetKernelArgInfo.
#pragma once

#include <string>
#include <vector>

namespace hivecl::kernels_parser::corpus {

struct Source {
  const char* name;
  std::string text;
  std::string options;
};

inline const std::vector<Source>& sources() {
  static const std::vector<Source> all{
      {"sgemm tiles", R"CL(
// SGEMM with square tiles in local memory (the shape of the classic tutorial kernels).
#ifndef TS
#define TS 8
#endif
#define IDX(row, col, ld) ((row) * (ld) + (col))
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void sgemm(const int M, const int N, const int K,
           const __global float* A,
           const __global float* B,
           __global float* C)
{
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];
    const int row = get_local_id(0), col = get_local_id(1);
    const int globalRow = TS * get_group_id(0) + row;
    const int globalCol = TS * get_group_id(1) + col;
    float acc = 0.0f;
    for (int t = 0; t < K / TS; t++) {
        Asub[col][row] = A[IDX(t * TS + col, globalRow, M)];
        Bsub[col][row] = B[IDX(globalCol, t * TS + row, K)];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) acc += Asub[k][row] * Bsub[col][k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[IDX(globalCol, globalRow, M)] = acc;
}
)CL", "-DTS=4"},
      {"n-body", R"CL(
/* n-body: float4 positions, softening as a by-value float, a local tile */
kernel void nbody_step(global const float4 *pos_old, global float4 *pos_new,
                       global float4 *vel, local float4 *tile,
                       const unsigned int n, float dt, float eps2)
{
  int gid = get_global_id(0);
  float4 p = pos_old[gid];
  float4 a = (float4)(0.0f);
  for (unsigned int j = 0; j < n; ++j) {
    float4 d = pos_old[j] - p;
    float inv = rsqrt(d.x * d.x + d.y * d.y + d.z * d.z + eps2);
    a += d * (inv * inv * inv);
  }
  vel[gid] += a * dt;
  pos_new[gid] = p + vel[gid] * dt;
  tile[get_local_id(0)] = p;
}
)CL", ""},
      {"reduction", R"CL(
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if defined(USE_DOUBLE) && USE_DOUBLE
typedef double real_t;
#else
typedef float real_t;
#endif
__kernel void reduce(__global const real_t* in, __global real_t* out,
                     __local real_t* scratch, const uint count)
{
  uint lid = get_local_id(0);
  scratch[lid] = get_global_id(0) < count ? in[get_global_id(0)] : 0;
  for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) scratch[lid] += scratch[lid + s];
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}
)CL", "-D USE_DOUBLE=0"},
      {"smith-waterman", R"CL(
// Smith-Waterman anti-diagonal step, in the style of VOCL's benchmark: eight arguments.
#define GAP_OPEN  (-10)
#define GAP_EXTEND (-1)
typedef struct { int match; int mismatch; } Scores;

__kernel void sw_diagonal(__global const char *query,
                          __global const char *subject,
                          __global int *score_matrix,
                          __global int *max_info,
                          const int query_length,
                          const int subject_length,
                          const int diagonal,
                          Scores scores)
{
  int i = get_global_id(0) + 1;
  int j = diagonal - i;
  if (j < 1 || j > subject_length || i > query_length) return;
  int w = subject_length + 1;
  int s = query[i - 1] == subject[j - 1] ? scores.match : scores.mismatch;
  int h = max(0, score_matrix[(i - 1) * w + j - 1] + s);
  h = max(h, score_matrix[(i - 1) * w + j] + GAP_OPEN);
  h = max(h, score_matrix[i * w + j - 1] + GAP_EXTEND);
  score_matrix[i * w + j] = h;
  atomic_max(max_info, h);
}
)CL", ""},
      {"image filter", R"CL(
__constant sampler_t nearest = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;

__kernel void blur(__read_only image2d_t input,
                   __write_only image2d_t output,
                   sampler_t sampler,
                   __constant float *weights,
                   int radius)
{
  int2 pos = (int2)(get_global_id(0), get_global_id(1));
  float4 sum = (float4)(0.0f);
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      sum += read_imagef(input, sampler, pos + (int2)(dx, dy)) * weights[(dy + radius) * (2 * radius + 1) + dx + radius];
  write_imagef(output, pos, sum + read_imagef(input, nearest, pos) * 0.0f);
}
)CL", ""},
      {"structs by value", R"CL(
struct Particle {
  float3 position;   /* 16 bytes: three components take four */
  char tag;
  double mass;
};
typedef struct __attribute__((packed)) { char a; int b; } Packed;
typedef union { int i; float4 v; } Either;
typedef uint2 Range;

kernel void move(struct Particle p, Packed q, Either e, Range r,
                 global struct Particle *out)
{
  out[get_global_id(0)] = p;
  out[0].tag = q.a + (char)e.i + (char)r.x;
}
)CL", ""},
  };
  return all;
}

}  // namespace hivecl::kernels_parser::corpus
