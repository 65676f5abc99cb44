// Context family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <set>
#include <span>

#include "icd/api.hpp"
#include "icd/spanning.hpp"
#include "log.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

_cl_context::~_cl_context() {
  destructor_callbacks.run(this);
  release_service_queues(this);
  for (cl_device_id device : devices) drop_device(device);
}

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

// A remote context on each connection of the devices, with that connection's devices: one
// part per connection, in the order of the devices (spanning.hpp).
cl_context create_context(const cl_context_properties* properties, const std::vector<cl_device_id>& devices) {
  ContextProperties parsed = parse_properties(properties);
  std::vector<Connection*> connections;
  for (cl_device_id device : devices)
    if (std::find(connections.begin(), connections.end(), device->connection) == connections.end())
      connections.push_back(device->connection);
  if (connections.size() > Spread::max_parts) throw ClError{CL_OUT_OF_RESOURCES};
  for (Connection* connection : connections) connection->ensure_connected();
  auto context = std::make_unique<_cl_context>();
  context->devices = devices;
  for (cl_device_id device : devices) hold_device(device);
  context->properties = std::move(parsed.as_given);
  const auto device_ids = [&](const Connection* connection) {
    std::vector<ObjectId> ids;
    for (cl_device_id device : devices)
      if (device->connection == connection) ids.push_back(device->id);
    return ids;
  };
  context->connection = connections.front();
  context->id = context->connection->new_id();
  context->connection->call<CreateContext>(
      {.id = context->id, .devices = device_ids(context->connection), .properties = parsed.forwarded});
  try {
    for (size_t i = 1; i < connections.size(); ++i) {
      const Replica part{connections[i], connections[i]->new_id()};
      part.connection->call<CreateContext>({.id = part.id, .devices = device_ids(part.connection),
                                            .properties = parsed.forwarded});
      context->replicas.push_back(part);
    }
  } catch (...) {
    destroy(context.release());
    throw;
  }
  if (context->spans())
    log::info("a context spans ", connections.size(), " connections (buffer data moves between them as needed)");
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
    return create_context(properties, devices_of_type(device_type));
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
