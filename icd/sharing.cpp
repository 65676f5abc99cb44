// Interoperation with graphics APIs (GL, EGL) and the older extension entry points of device
// fission: a remote device cannot share a local GL or EGL context, and HiveCL does not
// advertise these extensions. The entry points exist so that a call through the loader gets an
// error, not a crash.
#include <CL/cl.h>
#include <CL/cl_egl.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>

#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;

namespace {

template <class Handle>
Handle no_sharing(cl_context context, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> Handle {
    checked(context);
    throw ClError{CL_INVALID_CONTEXT};  // not created from a GL or EGL context
  });
}

cl_int not_shared(cl_command_queue queue) {
  return guarded([&] {
    checked(queue);
    throw ClError{CL_INVALID_MEM_OBJECT};  // no memory object of HiveCL comes from GL or EGL
  });
}

}  // namespace

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromGLBuffer(cl_context context, cl_mem_flags, cl_GLuint, cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromGLTexture(cl_context context, cl_mem_flags, cl_GLenum, cl_GLint, cl_GLuint,
                                                      cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromGLTexture2D(cl_context context, cl_mem_flags, cl_GLenum, cl_GLint,
                                                        cl_GLuint, cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromGLTexture3D(cl_context context, cl_mem_flags, cl_GLenum, cl_GLint,
                                                        cl_GLuint, cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromGLRenderbuffer(cl_context context, cl_mem_flags, cl_GLuint,
                                                           cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetGLObjectInfo(cl_mem, cl_gl_object_type*, cl_GLuint*) {
  return CL_INVALID_MEM_OBJECT;
}

CL_API_ENTRY cl_int CL_API_CALL clGetGLTextureInfo(cl_mem, cl_gl_texture_info, size_t, void*, size_t*) {
  return CL_INVALID_MEM_OBJECT;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueAcquireGLObjects(cl_command_queue command_queue, cl_uint, const cl_mem*,
                                                          cl_uint, const cl_event*, cl_event*) {
  return not_shared(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReleaseGLObjects(cl_command_queue command_queue, cl_uint, const cl_mem*,
                                                          cl_uint, const cl_event*, cl_event*) {
  return not_shared(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clGetGLContextInfoKHR(const cl_context_properties*, cl_gl_context_info, size_t, void*,
                                                      size_t*) {
  return CL_INVALID_OPERATION;
}

CL_API_ENTRY cl_event CL_API_CALL clCreateEventFromGLsyncKHR(cl_context context, cl_GLsync, cl_int* errcode_ret) {
  return no_sharing<cl_event>(context, errcode_ret);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateFromEGLImageKHR(cl_context context, CLeglDisplayKHR, CLeglImageKHR,
                                                        cl_mem_flags, const cl_egl_image_properties_khr*,
                                                        cl_int* errcode_ret) {
  return no_sharing<cl_mem>(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueAcquireEGLObjectsKHR(cl_command_queue command_queue, cl_uint, const cl_mem*,
                                                              cl_uint, const cl_event*, cl_event*) {
  return not_shared(command_queue);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReleaseEGLObjectsKHR(cl_command_queue command_queue, cl_uint, const cl_mem*,
                                                              cl_uint, const cl_event*, cl_event*) {
  return not_shared(command_queue);
}

CL_API_ENTRY cl_event CL_API_CALL clCreateEventFromEGLSyncKHR(cl_context context, CLeglSyncKHR, CLeglDisplayKHR,
                                                              cl_int* errcode_ret) {
  return no_sharing<cl_event>(context, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clCreateSubDevicesEXT(cl_device_id in_device, const cl_device_partition_property_ext*,
                                                      cl_uint, cl_device_id*, cl_uint*) {
  return guarded([&] {
    checked(in_device);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainDeviceEXT(cl_device_id device) {
  return guarded([&] { checked(device); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseDeviceEXT(cl_device_id device) {
  return guarded([&] { checked(device); });
}
