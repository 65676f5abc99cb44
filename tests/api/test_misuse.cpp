// Application-side misuse that the specification gives an error code for: NULL or foreign
// handles behind a valid first argument (which the loader dispatches on, so the
// implementation answers), in every object family. Released handles and double releases
// are undefined natively (a use after free in the native runtime): HiveCL's own answers to
// those are in tests/client; use after clReleaseContext (defined: the context lives while
// its objects do) is released_parents in test_context_queue_event.cpp.
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

constexpr const char* misuse_kernel_source = "__kernel void fill(__global int* data) { data[get_global_id(0)] = 7; }";

Buffer make_buffer(Probe& probe, cl_context context, size_t size) {
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &status));
  probe.status("create buffer", status);
  return buffer;
}

}  // namespace

DIFFERENTIAL_TEST(null_handles_behind_valid_objects, "NULL handles behind a valid object give the invalid-object error",
                  "[misuse]") {
  Setup setup = make_setup(probe);
  Buffer buffer = make_buffer(probe, setup.context, 64);
  Program program = build_program(probe, setup.context, misuse_kernel_source);
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, "fill", &status));
  probe.status("create kernel", status);
  std::vector<char> data(64);
  const cl_mem no_buffer = nullptr;
  const cl_event no_event = nullptr;
  const cl_device_id no_device = nullptr;
  const size_t global = 16;

  probe.status("read from NULL buffer",
               clEnqueueReadBuffer(setup.queue, no_buffer, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr));
  probe.status("write to NULL buffer",
               clEnqueueWriteBuffer(setup.queue, no_buffer, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr));
  probe.status("copy to NULL buffer", clEnqueueCopyBuffer(setup.queue, buffer, no_buffer, 0, 0, 64, 0, nullptr, nullptr));
  const cl_int pattern = 1;
  probe.status("fill NULL buffer",
               clEnqueueFillBuffer(setup.queue, no_buffer, &pattern, sizeof pattern, 0, 64, 0, nullptr, nullptr));
  probe.status("map NULL buffer", (clEnqueueMapBuffer(setup.queue, no_buffer, CL_TRUE, CL_MAP_READ, 0, 64, 0, nullptr,
                                                      nullptr, &status),
                                   status));
  probe.status("NULL event in a wait list", clEnqueueMarkerWithWaitList(setup.queue, 1, &no_event, nullptr));
  probe.status("queue on a NULL device",
               (clCreateCommandQueueWithProperties(setup.context, no_device, nullptr, &status), status));
  probe.status("kernel of a NULL name", (clCreateKernel(program, nullptr, &status), status));
  probe.status("NULL buffer for a global argument", clSetKernelArg(kernel, 0, sizeof no_buffer, &no_buffer));
  probe.status("NULL argument value of a pointer's size", clSetKernelArg(kernel, 0, sizeof(cl_mem), nullptr));

  // The proxy still serves this session: real work after the misuse.
  probe.status("set argument", clSetKernelArg(kernel, 0, sizeof(cl_mem), &buffer));
  probe.status("launch", clEnqueueNDRangeKernel(setup.queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  probe.status("read", clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr));
  probe.record("data", checksum(data.data(), data.size()));
}

DIFFERENTIAL_TEST(objects_of_another_context, "objects of another context are refused with CL_INVALID_CONTEXT",
                  "[misuse]") {
  Setup setup = make_setup(probe);
  Setup other = make_setup(probe);
  Buffer foreign = make_buffer(probe, other.context, 64);
  Buffer own = make_buffer(probe, setup.context, 64);
  std::vector<char> data(64);
  probe.status("read a foreign buffer",
               clEnqueueReadBuffer(setup.queue, foreign, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr));
  probe.status("copy between contexts", clEnqueueCopyBuffer(setup.queue, own, foreign, 0, 0, 64, 0, nullptr, nullptr));
  Event marker;
  probe.status("marker in the other context", clEnqueueMarkerWithWaitList(other.queue, 0, nullptr, marker.out()));
  probe.status("wait on the other context's event",
               clEnqueueMarkerWithWaitList(setup.queue, 1, marker.out(), nullptr));
  probe.status("finish the other queue", clFinish(other.queue));
}

// PoCL 3.1 crashes on a NULL kernel to clEnqueueNDRangeKernel and answers a NULL device in
// clBuildProgram's list with CL_INVALID_OPERATION: only HiveCL's answers, the specification's, are checked.
HIVECL_TEST(null_kernel_and_device, "a NULL kernel to launch and a NULL device to build for are refused", "[misuse]") {
  Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, misuse_kernel_source);
  const size_t global = 16;
  CHECK(status_name(clEnqueueNDRangeKernel(setup.queue, nullptr, 1, nullptr, &global, nullptr, 0, nullptr, nullptr)) ==
        status_name(CL_INVALID_KERNEL));
  const cl_device_id no_device = nullptr;
  CHECK(status_name(clBuildProgram(program, 1, &no_device, nullptr, nullptr, nullptr)) ==
        status_name(CL_INVALID_DEVICE));
  CHECK(status_name(clFinish(setup.queue)) == status_name(CL_SUCCESS));
}
