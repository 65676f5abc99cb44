// Images and samplers as both sides check them: the bytes of one pixel (client: to pack the
// application's data; proxy: to bound what a request may carry and count device memory), and
// the sampler modes OpenCL defines (the proxy never hands the device others).
#pragma once

#include <CL/cl.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>

// Khronos headers older than 2020 (Ubuntu 24.04's among them) lack this 1.2 channel type.
#ifndef CL_UNORM_INT24
#define CL_UNORM_INT24 0x10DF
#endif

namespace hivecl {

// Channels of a channel order; 0 for an unknown order.
inline uint32_t channel_count(uint32_t order) {
  switch (order) {
    case CL_R: case CL_A: case CL_Rx: case CL_INTENSITY: case CL_LUMINANCE: case CL_DEPTH: return 1;
    case CL_RG: case CL_RA: case CL_RGx: return 2;
    case CL_RGB: case CL_RGBx: case CL_sRGB: case CL_sRGBx: return 3;
    case CL_RGBA: case CL_BGRA: case CL_ARGB: case CL_ABGR: case CL_sRGBA: case CL_sBGRA: return 4;
    default: return 0;
  }
}

// An image's size in pixels along x, y and z (the array index is y of a 1D array, z of a 2D array).
inline std::array<uint64_t, 3> image_extent(uint32_t type, uint64_t width, uint64_t height, uint64_t depth,
                                            uint64_t array_size) {
  switch (type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return {width, array_size, 1};
    case CL_MEM_OBJECT_IMAGE2D: return {width, height, 1};
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: return {width, height, array_size};
    case CL_MEM_OBJECT_IMAGE3D: return {width, height, depth};
    default: return {width, 1, 1};
  }
}

// Bytes of one pixel of `format`; 0 when the format is not one OpenCL defines.
inline uint32_t image_element_size(uint32_t order, uint32_t data_type) {
  const uint32_t channels = channel_count(order);
  if (channels == 0) return 0;
  switch (data_type) {
    // Packed types: one element whatever the order, which must have three channels.
    case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555: return channels == 3 && order != CL_sRGB ? 2 : 0;
    case CL_UNORM_INT_101010: return channels == 3 && order != CL_sRGB ? 4 : 0;
    case CL_UNORM_INT_101010_2: return order == CL_RGBA ? 4 : 0;
    case CL_UNORM_INT24: return order == CL_DEPTH ? 4 : 0;
    default: break;
  }
  if (channels == 3) return 0;  // three channels need a packed type
  switch (data_type) {
    case CL_SNORM_INT8: case CL_UNORM_INT8: case CL_SIGNED_INT8: case CL_UNSIGNED_INT8: return channels;
    case CL_SNORM_INT16: case CL_UNORM_INT16: case CL_SIGNED_INT16: case CL_UNSIGNED_INT16: case CL_HALF_FLOAT:
      return 2 * channels;
    case CL_SIGNED_INT32: case CL_UNSIGNED_INT32: case CL_FLOAT: return 4 * channels;
    default: return 0;
  }
}

inline bool sampler_modes_valid(uint32_t normalized_coords, uint32_t addressing_mode, uint32_t filter_mode) {
  const bool addressing_known = addressing_mode == CL_ADDRESS_NONE || addressing_mode == CL_ADDRESS_CLAMP_TO_EDGE ||
                                addressing_mode == CL_ADDRESS_CLAMP || addressing_mode == CL_ADDRESS_REPEAT ||
                                addressing_mode == CL_ADDRESS_MIRRORED_REPEAT;
  const bool filter_known = filter_mode == CL_FILTER_NEAREST || filter_mode == CL_FILTER_LINEAR;
  return normalized_coords <= CL_TRUE && addressing_known && filter_known;
}

// a * b * c * d, or UINT64_MAX when it does not fit.
inline uint64_t saturating_product(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
  uint64_t product = a;
  for (uint64_t factor : {b, c, d}) {
    if (factor != 0 && product > max / factor) return max;
    product *= factor;
  }
  return product;
}

}  // namespace hivecl
