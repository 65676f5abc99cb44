// Device family on the proxy side: finding the node's native devices and describing them.
#include <CL/cl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "device_info.hpp"
#include "log.hpp"
#include "proxy/executors.hpp"
#include "proxy/server.hpp"
#include "proxy/topology.hpp"
#include "proxy/vendors.hpp"

namespace hivecl::proxy {

namespace {

cl_device_type device_type_setting(const std::string& setting) {
  if (setting == "gpu") return CL_DEVICE_TYPE_GPU;
  if (setting == "cpu") return CL_DEVICE_TYPE_CPU;
  if (setting == "accelerator") return CL_DEVICE_TYPE_ACCELERATOR;
  return CL_DEVICE_TYPE_ALL;
}

}  // namespace

std::vector<NativeDevice> find_native_devices(const Config& config) {
  cl_uint count = 0;
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  std::vector<NativeDevice> found;
  size_t index = 0;  // among the devices the platform and type filters leave
  for (cl_platform_id platform : platforms) {
    const std::string name = platform_string(platform, CL_PLATFORM_NAME);
    // Never serve HiveCL through HiveCL (it is also turned off in this process by HIVECL_IN_PROXY).
    if (name == "HiveCL") continue;
    if (!config.proxy_platform.empty() && name.find(config.proxy_platform) == std::string::npos) continue;
    cl_uint device_count = 0;
    const cl_device_type type = device_type_setting(config.proxy_device_type);
    if (clGetDeviceIDs(platform, type, 0, nullptr, &device_count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> devices(device_count);
    clGetDeviceIDs(platform, type, device_count, devices.data(), nullptr);
    for (cl_device_id device : devices)
      if (config.serves_device(index++))
        found.push_back({platform, device, name, platform_string(platform, CL_PLATFORM_VERSION)});
  }
  return found;
}

protocol::DeviceRecord describe_device(const NativeDevice& device, protocol::ObjectId id) {
  protocol::DeviceRecord record{.id = id, .native_platform = device.platform_name, .info = {}};
  for (const auto& [param, name] : device_params) {
    protocol::DeviceInfoEntry entry{.param = param, .error = CL_SUCCESS, .value = {}};
    try {
      entry.value = query_info([&](size_t size, void* value, size_t* size_ret) {
        return clGetDeviceInfo(device.device, entry.param, size, value, size_ret);
      });
    } catch (const ClError& error) {
      entry.error = error.code;
    }
    record.info.push_back(std::move(entry));
  }
  locate(device, record);
  return record;
}

namespace {

// The application's partition properties, with room past their end: a list cut short on the
// wire (a count or domain missing) is read by the native runtime as ending there.
std::vector<cl_device_partition_property> partition_properties(const std::vector<int64_t>& sent) {
  if (sent.empty() || sent.size() > p::max_partition_properties) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_device_partition_property> properties(sent.begin(), sent.end());
  properties.insert(properties.end(), {0, 0});
  return properties;
}

}  // namespace

// Counts the partition first: the application may only want the count, or have too little
// room, in which case nothing is made (CL_INVALID_VALUE, as natively).
p::CreateSubDevices::Reply execute(Call& call, const p::CreateSubDevices::Request& request) {
  const cl_device_id device = call.session.device(request.device);
  const auto properties = partition_properties(request.properties);
  cl_uint count = 0;
  check(clCreateSubDevices(device, properties.data(), 0, nullptr, &count));
  if (request.ids.empty()) return {.count = count, .devices = {}};
  if (request.ids.size() < count) throw ClError{CL_INVALID_VALUE};
  const std::vector<p::ObjectId> ids(request.ids.begin(), request.ids.begin() + count);
  for (auto id = ids.begin(); id != ids.end(); ++id) {
    call.session.check_fresh(*id);
    if (std::find(ids.begin(), id, *id) != id) throw ClError{CL_INVALID_VALUE};
  }
  std::vector<cl_device_id> made(count);
  check(clCreateSubDevices(device, properties.data(), count, made.data(), nullptr));
  // Sub-devices are of their parent's platform: what describe_device needs of it, asked once.
  const cl_platform_id platform = call.session.platform_of(request.device);
  NativeDevice described{platform, nullptr, platform_string(platform, CL_PLATFORM_NAME),
                         platform_string(platform, CL_PLATFORM_VERSION)};
  p::CreateSubDevices::Reply reply{.count = count, .devices = {}};
  for (size_t i = 0; i < made.size(); ++i) {
    described.device = made[i];
    reply.devices.push_back(describe_device(described, ids[i]));
    call.session.add(ids[i], p::ObjectKind::device, made[i]);
  }
  return reply;
}

}  // namespace hivecl::proxy
