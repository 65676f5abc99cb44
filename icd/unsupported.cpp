// Features every HiveCL device reports as absent (no pipes): their entry points answer with the
// error the specification gives for that case.
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

}  // namespace

// --- pipes ------------------------------------------------------------------------------

CL_API_ENTRY cl_mem CL_API_CALL clCreatePipe(cl_context context, cl_mem_flags, cl_uint, cl_uint,
                                             const cl_pipe_properties*, cl_int* errcode_ret) {
  return no_pipe_support(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPipeInfo(cl_mem, cl_pipe_info, size_t, void*, size_t*) {
  return CL_INVALID_MEM_OBJECT;
}
