// The first device of a platform (the first one unless named) with a context and a queue on
// it, as the fault tests' client programs and the proxy's unit tests start; `status` is that
// of the last call (the queue's).
#pragma once

#include <CL/cl.h>

struct FirstQueue {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_int status = CL_SUCCESS;
};

inline FirstQueue open_first_queue(cl_platform_id platform = nullptr) {
  FirstQueue opened;
  if (!platform) clGetPlatformIDs(1, &platform, nullptr);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &opened.device, nullptr);
  opened.context = clCreateContext(nullptr, 1, &opened.device, nullptr, nullptr, &opened.status);
  opened.queue = clCreateCommandQueueWithProperties(opened.context, opened.device, nullptr, &opened.status);
  return opened;
}
