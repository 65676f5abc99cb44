// Context family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <set>
#include <span>

#include "icd/api.hpp"
#include "log.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

bool _cl_context::has_device(cl_device_id device) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

namespace {

struct ContextProperties {
  std::vector<cl_context_properties> as_given;  // for CL_CONTEXT_PROPERTIES
  std::vector<int64_t> forwarded;               // for the proxy, without CL_CONTEXT_PLATFORM
};

ContextProperties parse_properties(const cl_context_properties* properties) {
  ContextProperties parsed;
  if (!properties) return parsed;
  std::set<cl_context_properties> seen;
  for (const cl_context_properties* property = properties; *property; property += 2) {
    const cl_context_properties name = property[0];
    const cl_context_properties value = property[1];
    if (!seen.insert(name).second) throw ClError{CL_INVALID_PROPERTY};
    if (name == CL_CONTEXT_PLATFORM) {
      if (reinterpret_cast<cl_platform_id>(value) != Cluster::get().platform()) throw ClError{CL_INVALID_PLATFORM};
    } else if (name == CL_CONTEXT_INTEROP_USER_SYNC) {
      if (value != CL_TRUE && value != CL_FALSE) throw ClError{CL_INVALID_PROPERTY};
      parsed.forwarded.insert(parsed.forwarded.end(), {name, value});
    } else {
      throw ClError{CL_INVALID_PROPERTY};  // the others are interop properties, and HiveCL offers no interop
    }
    parsed.as_given.insert(parsed.as_given.end(), {name, value});
  }
  parsed.as_given.push_back(0);
  return parsed;
}

cl_context create_context(const cl_context_properties* properties, const std::vector<cl_device_id>& devices) {
  ContextProperties parsed = parse_properties(properties);
  Connection* connection = devices.front()->connection;
  std::vector<ObjectId> device_ids;
  for (cl_device_id device : devices) {
    if (device->connection != connection) {
      log::error("clCreateContext: devices of several proxies in one context are not supported yet");
      throw ClError{CL_INVALID_DEVICE};
    }
    device_ids.push_back(device->id);
  }
  connection->ensure_connected();
  auto context = std::make_unique<_cl_context>();
  context->connection = connection;
  context->id = connection->new_id();
  context->devices = devices;
  context->properties = std::move(parsed.as_given);
  connection->call<CreateContext>({.id = context->id, .devices = device_ids, .properties = parsed.forwarded});
  return publish(context.release());
}

}  // namespace

CL_API_ENTRY cl_context CL_API_CALL clCreateContext(const cl_context_properties* properties, cl_uint num_devices,
                                                    const cl_device_id* devices,
                                                    void(CL_CALLBACK* pfn_notify)(const char*, const void*, size_t,
                                                                                  void*),
                                                    void* user_data, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    if (!devices || num_devices == 0 || (!pfn_notify && user_data)) throw ClError{CL_INVALID_VALUE};
    std::vector<cl_device_id> list;
    for (cl_device_id device : std::span(devices, num_devices)) {
      checked(device);
      // The specification ignores duplicates: the context has each device once.
      if (std::find(list.begin(), list.end(), device) == list.end()) list.push_back(device);
    }
    // The proxy reports no asynchronous context errors yet, so pfn_notify is never called.
    return create_context(properties, list);
  });
}

CL_API_ENTRY cl_context CL_API_CALL clCreateContextFromType(const cl_context_properties* properties,
                                                            cl_device_type device_type,
                                                            void(CL_CALLBACK* pfn_notify)(const char*, const void*,
                                                                                          size_t, void*),
                                                            void* user_data, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    if (!pfn_notify && user_data) throw ClError{CL_INVALID_VALUE};
    parse_properties(properties);
    auto devices = devices_of_type(device_type);
    // Until contexts may span proxies (cluster issue), a context by type holds the matching
    // devices of the first proxy that has any.
    std::erase_if(devices, [first = devices.front()->connection](cl_device_id d) { return d->connection != first; });
    return create_context(properties, devices);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainContext(cl_context context) {
  return guarded([&] { retain(context); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseContext(cl_context context) {
  return guarded([&] { release(context); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetContextInfo(cl_context context, cl_context_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return guarded([&] {
    checked(context);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_CONTEXT_REFERENCE_COUNT: return reply.scalar(context->refs.load());
      case CL_CONTEXT_NUM_DEVICES: return reply.scalar(static_cast<cl_uint>(context->devices.size()));
      case CL_CONTEXT_DEVICES: return reply.list(context->devices);
      case CL_CONTEXT_PROPERTIES: return reply.list(context->properties);
      default: remote_info(context->connection, InfoFamily::context, context->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetContextDestructorCallback(cl_context context,
                                                               void(CL_CALLBACK* pfn_notify)(cl_context, void*),
                                                               void* user_data) {
  return guarded([&] {
    checked(context);
    if (!pfn_notify) throw ClError{CL_INVALID_VALUE};
    context->destructor_callbacks.add(pfn_notify, user_data);
  });
}
