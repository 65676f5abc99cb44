// Features every HiveCL device reports as absent (CL_DEVICE_IMAGE_SUPPORT is false, no SVM
// capabilities, no pipes): their entry points answer with the error the specification
// gives for that case. Images and samplers come with the OpenCL 1.2 completeness issue.
#include <CL/cl.h>

#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;

namespace {

// Every cl_mem of HiveCL is a buffer, so an image (or pipe) argument is never valid.
cl_int not_an_image(cl_command_queue queue) {
  return guarded([&] {
    checked(queue);
    throw ClError{CL_INVALID_MEM_OBJECT};
  });
}

cl_mem no_image_support(cl_context context, cl_int* errcode_ret) {
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

// --- images -------------------------------------------------------------------------

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage(cl_context context, cl_mem_flags, const cl_image_format*,
                                              const cl_image_desc*, void*, cl_int* errcode_ret) {
  return no_image_support(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImageWithProperties(cl_context context, const cl_mem_properties*, cl_mem_flags,
                                                            const cl_image_format*, const cl_image_desc*, void*,
                                                            cl_int* errcode_ret) {
  return no_image_support(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage2D(cl_context context, cl_mem_flags, const cl_image_format*, size_t,
                                                size_t, size_t, void*, cl_int* errcode_ret) {
  return no_image_support(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage3D(cl_context context, cl_mem_flags, const cl_image_format*, size_t,
                                                size_t, size_t, size_t, size_t, void*, cl_int* errcode_ret) {
  return no_image_support(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetSupportedImageFormats(cl_context context, cl_mem_flags, cl_mem_object_type,
                                                           cl_uint, cl_image_format*, cl_uint* num_image_formats) {
  return guarded([&] {
    checked(context);
    if (num_image_formats) *num_image_formats = 0;
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetImageInfo(cl_mem, cl_image_info, size_t, void*, size_t*) {
  return CL_INVALID_MEM_OBJECT;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadImage(cl_command_queue command_queue, cl_mem, cl_bool, const size_t*,
                                                   const size_t*, size_t, size_t, void*, cl_uint, const cl_event*,
                                                   cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteImage(cl_command_queue command_queue, cl_mem, cl_bool, const size_t*,
                                                    const size_t*, size_t, size_t, const void*, cl_uint,
                                                    const cl_event*, cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyImage(cl_command_queue command_queue, cl_mem, cl_mem, const size_t*,
                                                   const size_t*, const size_t*, cl_uint, const cl_event*, cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillImage(cl_command_queue command_queue, cl_mem, const void*, const size_t*,
                                                   const size_t*, cl_uint, const cl_event*, cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyImageToBuffer(cl_command_queue command_queue, cl_mem, cl_mem,
                                                           const size_t*, const size_t*, size_t, cl_uint,
                                                           const cl_event*, cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBufferToImage(cl_command_queue command_queue, cl_mem, cl_mem, size_t,
                                                           const size_t*, const size_t*, cl_uint, const cl_event*,
                                                           cl_event*) {
  return not_an_image(command_queue);
}

CL_API_ENTRY void* CL_API_CALL clEnqueueMapImage(cl_command_queue command_queue, cl_mem, cl_bool, cl_map_flags,
                                                 const size_t*, const size_t*, size_t*, size_t*, cl_uint,
                                                 const cl_event*, cl_event*, cl_int* errcode_ret) {
  const cl_int status = not_an_image(command_queue);
  if (errcode_ret) *errcode_ret = status;
  return nullptr;
}

// --- samplers: none can exist without image support ----------------------------------

CL_API_ENTRY cl_sampler CL_API_CALL clCreateSampler(cl_context context, cl_bool, cl_addressing_mode, cl_filter_mode,
                                                    cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_sampler {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_sampler CL_API_CALL clCreateSamplerWithProperties(cl_context context, const cl_sampler_properties*,
                                                                  cl_int* errcode_ret) {
  return clCreateSampler(context, CL_FALSE, 0, 0, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainSampler(cl_sampler) { return CL_INVALID_SAMPLER; }
CL_API_ENTRY cl_int CL_API_CALL clReleaseSampler(cl_sampler) { return CL_INVALID_SAMPLER; }
CL_API_ENTRY cl_int CL_API_CALL clGetSamplerInfo(cl_sampler, cl_sampler_info, size_t, void*, size_t*) {
  return CL_INVALID_SAMPLER;
}

// --- pipes ------------------------------------------------------------------------------

CL_API_ENTRY cl_mem CL_API_CALL clCreatePipe(cl_context context, cl_mem_flags, cl_uint, cl_uint,
                                             const cl_pipe_properties*, cl_int* errcode_ret) {
  return no_image_support(context, errcode_ret);  // same answer: no device supports pipes
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
