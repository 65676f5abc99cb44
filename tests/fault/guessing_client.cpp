// A client that tries to reach another session's objects by guessing their ids:
//   guessing-client CONTEXT QUEUE MEM PROGRAM KERNEL EVENT   (the other session's ids)
// It makes one object of each kind in its own session, rewrites the remote id in the
// handle (libhivecl's object layout, icd/objects.hpp) to each id and its neighbours, and
// uses, reads, writes and finally releases through it: the proxy must answer each attempt
// with the invalid-object error of the kind. Prints "rejected N"; exit status 1 if any
// attempt got another answer (or none was made).
#include <CL/cl.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "../first_queue.hpp"
#include "icd/objects.hpp"

namespace {

using hivecl::protocol::ObjectId;

const char* source = "__kernel void nothing(__global int* data) { data[0] = 0; }";
int rejected = 0;
int unexpected = 0;

void expect(const char* what, ObjectId guess, cl_int status, cl_int wanted) {
  if (status == wanted) {
    ++rejected;
    return;
  }
  ++unexpected;
  std::printf("unexpected: %s with id %llu gave %d, not %d\n", what, static_cast<unsigned long long>(guess), status,
              wanted);
}

template <class Handle>
ObjectId& id_of(Handle handle) {
  return handle->id;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) return 2;
  std::vector<ObjectId> theirs;
  for (int i = 1; i < argc; ++i) theirs.push_back(std::strtoull(argv[i], nullptr, 10));
  const FirstQueue opened = open_first_queue();
  cl_device_id device = opened.device;
  cl_context context = opened.context;
  cl_command_queue queue = opened.queue;
  cl_int status = opened.status;
  cl_mem own = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, nullptr, &status);
  // One object of each kind to forge.
  cl_context forged_context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  cl_command_queue forged_queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  cl_mem forged_mem = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, nullptr, &status);
  cl_program forged_program = clCreateProgramWithSource(context, 1, &source, nullptr, &status);
  if (clBuildProgram(forged_program, 1, &device, nullptr, nullptr, nullptr) != CL_SUCCESS) return 3;
  cl_kernel forged_kernel = clCreateKernel(forged_program, "nothing", &status);
  cl_event forged_event = nullptr;
  if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &forged_event) != CL_SUCCESS || clFinish(queue) != CL_SUCCESS)
    return 3;
  // A command that no clFinish has seen end: each clFinish of the forged queue then goes to the
  // proxy (libhivecl answers that of a queue it knows to be idle itself).
  if (clEnqueueMarkerWithWaitList(forged_queue, 0, nullptr, nullptr) != CL_SUCCESS) return 3;
  const ObjectId own_last = id_of(forged_event);  // ids at or below are this session's own

  std::vector<char> data(64, 0x11);
  // For each kind: how the handle is forged, and the calls to try with it.
  const std::vector<std::function<void(ObjectId)>> attempts{
      [&](ObjectId guess) {
        id_of(forged_context) = guess;
        cl_int result = CL_SUCCESS;
        clCreateBuffer(forged_context, CL_MEM_READ_WRITE, 64, nullptr, &result);
        expect("clCreateBuffer on a guessed context", guess, result, CL_INVALID_CONTEXT);
      },
      [&](ObjectId guess) {
        id_of(forged_queue) = guess;
        expect("clFinish on a guessed queue", guess, clFinish(forged_queue), CL_INVALID_COMMAND_QUEUE);
        expect("clEnqueueReadBuffer on a guessed queue", guess,
               clEnqueueReadBuffer(forged_queue, own, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr),
               CL_INVALID_COMMAND_QUEUE);
      },
      [&](ObjectId guess) {
        id_of(forged_mem) = guess;
        expect("clEnqueueReadBuffer of a guessed buffer", guess,
               clEnqueueReadBuffer(queue, forged_mem, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr),
               CL_INVALID_MEM_OBJECT);
        expect("clEnqueueWriteBuffer to a guessed buffer", guess,
               clEnqueueWriteBuffer(queue, forged_mem, CL_TRUE, 0, 64, data.data(), 0, nullptr, nullptr),
               CL_INVALID_MEM_OBJECT);
        expect("clEnqueueCopyBuffer from a guessed buffer", guess,
               clEnqueueCopyBuffer(queue, forged_mem, own, 0, 0, 64, 0, nullptr, nullptr), CL_INVALID_MEM_OBJECT);
        expect("clFinish after the copy", guess, clFinish(queue), CL_SUCCESS);
      },
      [&](ObjectId guess) {
        id_of(forged_program) = guess;
        size_t size = 0;
        expect("clGetProgramBuildInfo of a guessed program", guess,
               clGetProgramBuildInfo(forged_program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size),
               CL_INVALID_PROGRAM);
      },
      [&](ObjectId guess) {
        id_of(forged_kernel) = guess;
        size_t size = 0;
        expect("clGetKernelWorkGroupInfo of a guessed kernel", guess,
               clGetKernelWorkGroupInfo(forged_kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof size, &size, nullptr),
               CL_INVALID_KERNEL);
        // clSetKernelArg sends nothing: the launch carries the argument and meets the proxy's check.
        expect("clSetKernelArg of a guessed kernel", guess, clSetKernelArg(forged_kernel, 0, sizeof own, &own),
               CL_SUCCESS);
        const size_t one = 1;
        expect("clEnqueueNDRangeKernel of a guessed kernel", guess,
               clEnqueueNDRangeKernel(queue, forged_kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
               CL_INVALID_KERNEL);
      },
      [&](ObjectId guess) {
        id_of(forged_event) = guess;
        expect("clWaitForEvents on a guessed event", guess, clWaitForEvents(1, &forged_event), CL_INVALID_EVENT);
      },
  };
  for (size_t kind = 0; kind < attempts.size(); ++kind)
    for (ObjectId guess = theirs[kind] - 2; guess <= theirs[kind] + 2; ++guess)
      if (guess > own_last) attempts[kind](guess);

  // Releases of the other session's exact ids: the proxy must ignore them.
  id_of(forged_context) = theirs[0];
  id_of(forged_queue) = theirs[1];
  id_of(forged_mem) = theirs[2];
  id_of(forged_program) = theirs[3];
  id_of(forged_kernel) = theirs[4];
  id_of(forged_event) = theirs[5];
  clReleaseEvent(forged_event);
  clReleaseKernel(forged_kernel);
  clReleaseProgram(forged_program);
  clReleaseMemObject(forged_mem);
  clReleaseCommandQueue(forged_queue);
  clReleaseContext(forged_context);
  clFinish(queue);  // the releases have reached the proxy before this returns
  std::printf("rejected %d\n", rejected);
  return unexpected == 0 && rejected > 0 ? 0 : 1;
}
