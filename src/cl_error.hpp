// An OpenCL error raised inside HiveCL; entry points and executors turn it into a status.
#pragma once

#include <CL/cl.h>

namespace hivecl {

struct ClError {
  cl_int code;
};

// Throws ClError for any status other than CL_SUCCESS.
inline void check(cl_int status) {
  if (status != CL_SUCCESS) throw ClError{status};
}

// The status HiveCL gives calls and events on a proxy that is gone (dead, unreachable,
// shut down): every call lists CL_OUT_OF_RESOURCES among its errors.
inline constexpr cl_int peer_lost_status = CL_OUT_OF_RESOURCES;

}  // namespace hivecl
