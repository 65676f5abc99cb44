// Features every HiveCL device reports as absent (no SVM capabilities, no pipes): their
// entry points answer with the error the specification gives for that case.
#include <CL/cl.h>

#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;

namespace {

cl_mem no_pipe_support(cl_context context, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_mem {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

cl_int no_svm(cl_command_queue queue) {
  return guarded([&] {
    checked(queue);
    throw ClError{CL_INVALID_OPERATION};
  });
}

}  // namespace

// --- pipes ------------------------------------------------------------------------------

CL_API_ENTRY cl_mem CL_API_CALL clCreatePipe(cl_context context, cl_mem_flags, cl_uint, cl_uint,
                                             const cl_pipe_properties*, cl_int* errcode_ret) {
  return no_pipe_support(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPipeInfo(cl_mem, cl_pipe_info, size_t, void*, size_t*) {
  return CL_INVALID_MEM_OBJECT;
}

// --- shared virtual memory ----------------------------------------------------------

CL_API_ENTRY void* CL_API_CALL clSVMAlloc(cl_context, cl_svm_mem_flags, size_t, cl_uint) { return nullptr; }

CL_API_ENTRY void CL_API_CALL clSVMFree(cl_context, void*) {}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMFree(cl_command_queue command_queue, cl_uint, void*[],
                                                 void(CL_CALLBACK*)(cl_command_queue, cl_uint, void*[], void*), void*,
                                                 cl_uint, const cl_event*, cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMemcpy(cl_command_queue command_queue, cl_bool, void*, const void*, size_t,
                                                   cl_uint, const cl_event*, cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMemFill(cl_command_queue command_queue, void*, const void*, size_t, size_t,
                                                    cl_uint, const cl_event*, cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMap(cl_command_queue command_queue, cl_bool, cl_map_flags, void*, size_t,
                                                cl_uint, const cl_event*, cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMUnmap(cl_command_queue command_queue, void*, cl_uint, const cl_event*,
                                                  cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueSVMMigrateMem(cl_command_queue command_queue, cl_uint, const void**,
                                                       const size_t*, cl_mem_migration_flags, cl_uint,
                                                       const cl_event*, cl_event*) {
  return no_svm(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArgSVMPointer(cl_kernel kernel, cl_uint, const void*) {
  return guarded([&] {
    checked(kernel);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelExecInfo(cl_kernel kernel, cl_kernel_exec_info, size_t, const void*) {
  return guarded([&] {
    checked(kernel);
    throw ClError{CL_INVALID_OPERATION};  // every exec info parameter is about SVM
  });
}
