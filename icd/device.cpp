// Device family on the client side: devices are answered from the proxies' rendezvous
// records, adjusted to what HiveCL supports (the device's own values otherwise).
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_hivecl.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "device_info.hpp"
#include "icd/api.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace hivecl::icd {

namespace {

// Extensions that only add kernel-language features or read-only queries, which pass
// through HiveCL unchanged, and cl_khr_subgroups, whose one function HiveCL forwards. Anything
// else needs HiveCL's own support before it may be advertised.
const std::set<std::string, std::less<>> forwarded_extensions{
    "cl_khr_byte_addressable_store", "cl_khr_fp16", "cl_khr_fp64",
    "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics",
    "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics",
    "cl_khr_subgroups", "cl_khr_subgroup_extended_types", "cl_khr_subgroup_non_uniform_vote",
    "cl_khr_subgroup_ballot", "cl_khr_subgroup_non_uniform_arithmetic", "cl_khr_subgroup_shuffle",
    "cl_khr_subgroup_shuffle_relative", "cl_khr_subgroup_clustered_reduce", "cl_khr_subgroup_rotate",
    "cl_khr_integer_dot_product", "cl_khr_extended_bit_ops", "cl_khr_expect_assume", "cl_khr_kernel_clock",
    "cl_khr_work_group_uniform_arithmetic", "cl_ext_float_atomics", "cl_ext_cxx_for_opencl",
    "cl_khr_3d_image_writes", "cl_khr_depth_images",
    "cl_khr_pci_bus_info", "cl_khr_device_uuid", "cl_khr_priority_hints", "cl_khr_throttle_hints",
    "cl_nv_device_attribute_query", "cl_nv_pragma_unroll", "cl_nv_compiler_options",
    "cl_amd_device_attribute_query",
};

// OpenCL C features whose API side HiveCL does not provide yet.
const std::set<std::string, std::less<>> withheld_features{
    "__opencl_c_pipes", "__opencl_c_device_enqueue",
};

template <class T>
std::vector<std::byte> as_bytes(const T& value) {
  std::vector<std::byte> bytes(sizeof value);
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

std::vector<std::byte> string_bytes(const std::string& text) {
  std::vector<std::byte> bytes(text.size() + 1);
  std::memcpy(bytes.data(), text.c_str(), text.size() + 1);
  return bytes;
}

std::string c_string(const std::vector<std::byte>& value) {
  return std::string(reinterpret_cast<const char*>(value.data()), strnlen(reinterpret_cast<const char*>(value.data()), value.size()));
}

std::string filter_extensions(const std::string& list) {
  std::istringstream words(list);
  std::string word, kept;
  while (words >> word)
    if (forwarded_extensions.contains(word)) kept += (kept.empty() ? "" : " ") + word;
  return kept;
}

// Keeps the cl_name_version entries of a *_WITH_VERSION list that pass `keep`.
template <class Keep>
std::vector<std::byte> filter_versions(const std::vector<std::byte>& value, Keep keep) {
  std::vector<std::byte> kept;
  for (size_t offset = 0; offset + sizeof(cl_name_version) <= value.size(); offset += sizeof(cl_name_version)) {
    cl_name_version entry;
    std::memcpy(&entry, value.data() + offset, sizeof entry);
    entry.name[CL_NAME_VERSION_MAX_NAME_SIZE - 1] = '\0';
    if (keep(std::string_view(entry.name))) kept.insert(kept.end(), value.data() + offset, value.data() + offset + sizeof entry);
  }
  return kept;
}

void override_value(_cl_device_id& device, cl_device_info param, std::vector<std::byte> value) {
  device.info[param] = {CL_SUCCESS, std::move(value)};
}

// What HiveCL does not (yet) offer is reported as absent, whatever the device can do.
void apply_policy(_cl_device_id& device) {
  const auto edit = [&](cl_device_info param, auto change) {
    if (auto it = device.info.find(param); it != device.info.end() && it->second.error == CL_SUCCESS)
      it->second.value = change(it->second.value);
  };
  edit(CL_DEVICE_EXTENSIONS, [](const auto& v) { return string_bytes(filter_extensions(c_string(v))); });
  edit(CL_DEVICE_EXTENSIONS_WITH_VERSION, [](const auto& v) {
    return filter_versions(v, [](std::string_view name) { return forwarded_extensions.contains(name); });
  });
  edit(CL_DEVICE_OPENCL_C_FEATURES, [](const auto& v) {
    return filter_versions(v, [](std::string_view name) { return !withheld_features.contains(name); });
  });
  // A bitfield of capabilities, with those HiveCL offers alone kept.
  const auto keep_bits = [&](cl_device_info param, cl_bitfield offered) {
    edit(param, [offered](const auto& v) { return as_bytes(scalar_from<cl_bitfield>(v) & offered); });
  };
  keep_bits(CL_DEVICE_EXECUTION_CAPABILITIES, ~cl_bitfield{CL_EXEC_NATIVE_KERNEL});
  // Shared virtual memory as coarse-grained buffers only (svm.cpp moves their data at mappings).
  keep_bits(CL_DEVICE_SVM_CAPABILITIES, CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
  // Pipes, on-device queues, IL programs, built-in kernels and 2D images from buffers are not
  // available through HiveCL yet. Images, samplers, sub-groups and partitions into sub-devices
  // are the device's own.
  for (cl_device_info zero_uint : {CL_DEVICE_MAX_PIPE_ARGS,
                                   CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS, CL_DEVICE_PIPE_MAX_PACKET_SIZE,
                                   CL_DEVICE_MAX_ON_DEVICE_QUEUES, CL_DEVICE_MAX_ON_DEVICE_EVENTS,
                                   CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE, CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE,
                                   CL_DEVICE_IMAGE_PITCH_ALIGNMENT,
                                   CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT})
    override_value(device, zero_uint, as_bytes(cl_uint{0}));
  override_value(device, CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES, as_bytes(cl_command_queue_properties{0}));
  override_value(device, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES, as_bytes(cl_device_device_enqueue_capabilities{0}));
  override_value(device, CL_DEVICE_PIPE_SUPPORT, as_bytes(cl_bool{CL_FALSE}));
  override_value(device, CL_DEVICE_IL_VERSION, string_bytes(""));
  override_value(device, CL_DEVICE_ILS_WITH_VERSION, {});
  override_value(device, CL_DEVICE_BUILT_IN_KERNELS, string_bytes(""));
  override_value(device, CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION, {});
  // The application's memory is not the device's, even when the proxy's is.
  override_value(device, CL_DEVICE_HOST_UNIFIED_MEMORY, as_bytes(cl_bool{CL_FALSE}));
  override_value(device, CL_DEVICE_NODE_NAME_HIVECL, string_bytes(device.node));
}

}  // namespace

std::unique_ptr<_cl_device_id> make_device(Connection* connection, const protocol::DeviceRecord& record,
                                           const std::string& node) {
  auto device = std::make_unique<_cl_device_id>();
  device->connection = connection;
  device->id = record.id;
  device->node = node;
  for (const auto& entry : record.info) device->info[entry.param] = {entry.error, entry.value};
  apply_policy(*device);
  const auto& type = device->info[CL_DEVICE_TYPE];
  if (type.error == CL_SUCCESS && type.value.size() == sizeof(cl_device_type))
    std::memcpy(&device->type, type.value.data(), sizeof device->type);
  cl_uint address_bits = 64;
  const auto& bits = device->info[CL_DEVICE_ADDRESS_BITS];
  if (bits.error == CL_SUCCESS && bits.value.size() == sizeof address_bits)
    std::memcpy(&address_bits, bits.value.data(), sizeof address_bits);
  device->size_max = address_bits >= 64 ? UINT64_MAX : (uint64_t{1} << address_bits) - 1;
  return device;
}

std::vector<cl_device_id> devices_of_type(cl_device_type type) {
  constexpr cl_device_type known = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
                                   CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;
  if (type == 0 || (type != CL_DEVICE_TYPE_ALL && (type & ~known))) throw ClError{CL_INVALID_DEVICE_TYPE};
  // The platform's default device is its first one.
  const auto& devices = Cluster::get().devices();
  std::vector<cl_device_id> matching;
  for (cl_device_id device : devices) {
    const bool is_default = (type & CL_DEVICE_TYPE_DEFAULT) && device == devices.front();
    if (type == CL_DEVICE_TYPE_ALL || (device->type & type) || is_default) matching.push_back(device);
  }
  if (matching.empty()) throw ClError{CL_DEVICE_NOT_FOUND};
  return matching;
}

void hold_device(cl_device_id device) {
  if (device->parent) device->refs.fetch_add(1, std::memory_order_relaxed);
}

void drop_device(cl_device_id device) {
  if (!device->parent || device->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  unregister_handle(device);
  release_remote(device->connection, ObjectKind::device, device->id);
  const cl_device_id parent = device->parent;
  delete device;
  drop_device(parent);
}

}  // namespace hivecl::icd

namespace {

// The application's partition properties, read no further than the runtime would: a name, and
// its value or list of counts, until the list's 0 or a name the runtime rejects.
std::vector<int64_t> partition_properties(const cl_device_partition_property* properties) {
  if (!properties) throw ClError{CL_INVALID_VALUE};
  std::vector<int64_t> list;
  const auto take = [&](const cl_device_partition_property*& at) {
    if (list.size() == max_partition_properties) throw ClError{CL_INVALID_VALUE};
    list.push_back(*at);
    return *at++;
  };
  for (const cl_device_partition_property* at = properties;;) {
    const cl_device_partition_property name = take(at);
    if (name == CL_DEVICE_PARTITION_BY_COUNTS) {
      while (take(at) != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END) {}
    } else if (name == CL_DEVICE_PARTITION_EQUALLY || name == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN) {
      take(at);
    } else {
      return list;  // the end, or a name the runtime rejects
    }
  }
}

cl_uint max_sub_devices(cl_device_id device) {
  cl_uint most = 0;
  const auto found = device->info.find(CL_DEVICE_PARTITION_MAX_SUB_DEVICES);
  if (found != device->info.end() && found->second.error == CL_SUCCESS && found->second.value.size() == sizeof most)
    std::memcpy(&most, found->second.value.data(), sizeof most);
  return most;
}

cl_device_id make_sub_device(cl_device_id parent, const DeviceRecord& record) {
  _cl_device_id* device = make_device(parent->connection, record, parent->node).release();
  device->parent = parent;
  hold_device(parent);
  return publish(device);
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type,
                                               cl_uint num_entries, cl_device_id* devices, cl_uint* num_devices) {
  return guarded([&] {
    Cluster& cluster = Cluster::get();
    if (platform && platform != cluster.platform()) throw ClError{CL_INVALID_PLATFORM};
    if ((num_entries == 0 && devices) || (!devices && !num_devices)) throw ClError{CL_INVALID_VALUE};
    if (cluster.config().eager_mpi_init) cluster.start_mpi();
    const auto matching = devices_of_type(device_type);
    if (num_devices) *num_devices = static_cast<cl_uint>(matching.size());
    if (devices) std::copy_n(matching.begin(), std::min<size_t>(num_entries, matching.size()), devices);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info param_name,
                                                size_t param_value_size, void* param_value,
                                                size_t* param_value_size_ret) {
  return guarded([&] {
    checked(device);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    if (param_name == CL_DEVICE_PLATFORM) return reply.scalar(Cluster::get().platform());
    if (param_name == CL_DEVICE_PARENT_DEVICE) return reply.scalar(device->parent);
    if (param_name == CL_DEVICE_REFERENCE_COUNT) return reply.scalar(device->parent ? device->refs.load() : cl_uint{1});
    if (param_name == CL_DEVICE_AVAILABLE) {
      const bool available = device_value<cl_bool>(device, CL_DEVICE_AVAILABLE) && device->connection->available();
      return reply.scalar(cl_bool(available));
    }
    if (param_name == CL_DEVICE_DATA_PATH_HIVECL) return reply.string(device->connection->data_path_name());
    const auto it = device->info.find(param_name);
    if (it == device->info.end()) throw ClError{CL_INVALID_VALUE};
    check(it->second.error);
    reply.list(it->second.value);
  });
}

// The proxy makes at most as many sub-devices as the application has room for, and none when
// that is too few (CL_INVALID_VALUE, as natively), or when it asks only for their count.
CL_API_ENTRY cl_int CL_API_CALL clCreateSubDevices(cl_device_id in_device,
                                                   const cl_device_partition_property* properties,
                                                   cl_uint num_devices, cl_device_id* out_devices,
                                                   cl_uint* num_devices_ret) {
  return guarded([&] {
    checked(in_device);
    CreateSubDevices::Request request{.device = in_device->id, .properties = partition_properties(properties), .ids = {}};
    if (out_devices) {
      request.ids.resize(std::min(num_devices, max_sub_devices(in_device)));
      for (ObjectId& id : request.ids) id = in_device->connection->new_id();
    }
    in_device->connection->ensure_connected();
    const auto reply = in_device->connection->call<CreateSubDevices>(request);
    if (out_devices && request.ids.empty()) throw ClError{CL_INVALID_VALUE};  // no room, however many
    if (reply.devices.size() > request.ids.size() ||
        !std::equal(reply.devices.begin(), reply.devices.end(), request.ids.begin(),
                    [](const DeviceRecord& made, ObjectId id) { return made.id == id; }))
      throw ClError{CL_OUT_OF_RESOURCES};  // not what was asked for: a proxy at fault
    for (size_t i = 0; i < reply.devices.size(); ++i) out_devices[i] = make_sub_device(in_device, reply.devices[i]);
    if (num_devices_ret) *num_devices_ret = reply.count;
  });
}

// Root devices are not reference counted (OpenCL 1.2): retain and release only check the handle.
CL_API_ENTRY cl_int CL_API_CALL clRetainDevice(cl_device_id device) {
  return guarded([&] { hold_device(checked(device)); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseDevice(cl_device_id device) {
  return guarded([&] { drop_device(checked(device)); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceAndHostTimer(cl_device_id device, cl_ulong*, cl_ulong*) {
  return guarded([&] {
    checked(device);
    throw ClError{CL_INVALID_OPERATION};  // CL_PLATFORM_HOST_TIMER_RESOLUTION is 0
  });
}
