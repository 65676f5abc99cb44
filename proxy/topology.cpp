#include "proxy/topology.hpp"

#include "log.hpp"

#if HIVECL_HAVE_HWLOC
#include <hwloc.h>
#include <hwloc/linux.h>
#include <hwloc/opencl.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#endif

namespace hivecl::proxy {

#if HIVECL_HAVE_HWLOC

namespace {

using Bitmap = std::unique_ptr<hwloc_bitmap_s, decltype(&hwloc_bitmap_free)>;

Bitmap new_bitmap() { return {hwloc_bitmap_alloc(), &hwloc_bitmap_free}; }

std::string listed(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set);
  std::string result = text ? text : "?";
  std::free(text);
  return result;
}

// The device's PCI address, "DDDD:BB:DD.F": from cl_khr_pci_bus_info where the device has it,
// else hwloc's helper. (The helper prefers NVIDIA's own attributes, which on an H100 named
// another function of another slot: docs/FINDINGS.md.)
std::optional<std::string> pci_bus_id(cl_device_id device) {
  constexpr cl_device_info pci_bus_info_khr = 0x410F;  // CL_DEVICE_PCI_BUS_INFO_KHR
  cl_uint khr[4] = {};  // domain, bus, device, function
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (clGetDeviceInfo(device, pci_bus_info_khr, sizeof khr, khr, nullptr) == CL_SUCCESS) {
    domain = khr[0], bus = khr[1], slot = khr[2], function = khr[3];
  } else if (hwloc_opencl_get_device_pci_busid(device, &domain, &bus, &slot, &function) != 0) {
    return std::nullopt;
  }
  char id[48];
  std::snprintf(id, sizeof id, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  return id;
}

// The cores local to the device's PCI slot (Linux's sysfs); the whole machine where it has none.
void device_cores(hwloc_topology_t topology, cl_device_id device, hwloc_bitmap_t cores) {
  const auto id = pci_bus_id(device);
  const std::string path = "/sys/bus/pci/devices/" + id.value_or("none") + "/local_cpus";
  if (!id || hwloc_linux_read_path_as_cpumask(path.c_str(), cores) != 0 || hwloc_bitmap_iszero(cores))
    hwloc_bitmap_copy(cores, hwloc_topology_get_complete_cpuset(topology));
}

// The cores near all of `devices`; the whole machine where one has no PCI locality.
Bitmap cores_near(hwloc_topology_t topology, const std::vector<NativeDevice>& devices) {
  Bitmap near = new_bitmap();
  for (const NativeDevice& device : devices) {
    Bitmap local = new_bitmap();
    device_cores(topology, device.device, local.get());
    hwloc_bitmap_or(near.get(), near.get(), local.get());
  }
  hwloc_bitmap_and(near.get(), near.get(), hwloc_topology_get_topology_cpuset(topology));
  return near;
}

void bind(hwloc_topology_t topology, hwloc_const_bitmap_t cores) {
  Bitmap nodes = new_bitmap();
  hwloc_cpuset_to_nodeset(topology, cores, nodes.get());
  if (hwloc_set_cpubind(topology, cores, HWLOC_CPUBIND_PROCESS) != 0) {
    log::info("placement: could not bind to cores ", listed(cores), " near the devices");
    return;
  }
  const bool memory = hwloc_set_membind(topology, nodes.get(), HWLOC_MEMBIND_BIND,
                                        HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) == 0;
  log::info("placement: bound to cores ", listed(cores), " (NUMA node ", listed(nodes.get()),
            memory ? "), memory there too" : "), memory not bound");
}

// A topology of cores and NUMA nodes only: I/O discovery would load hwloc's OpenCL plugin here.
using Topology = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

Topology load_topology() {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) return {nullptr, &hwloc_topology_destroy};
  Topology loaded{topology, &hwloc_topology_destroy};
  hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(topology) != 0) loaded.reset();
  return loaded;
}

}  // namespace

void locate(const NativeDevice& device, protocol::DeviceRecord& record) {
  const auto id = pci_bus_id(device.device);
  if (!id) return;
  record.pci_bus_id = *id;
  const Topology topology = load_topology();
  if (!topology) return;
  const Bitmap cores = new_bitmap(), nodes = new_bitmap();
  device_cores(topology.get(), device.device, cores.get());
  hwloc_cpuset_to_nodeset(topology.get(), cores.get(), nodes.get());
  if (hwloc_bitmap_weight(nodes.get()) == 1) record.numa_node = hwloc_bitmap_first(nodes.get());
}

void place_near(const std::vector<NativeDevice>& devices) {
  const Topology topology = load_topology();
  if (!topology) return;
  const Bitmap near = cores_near(topology.get(), devices);
  if (hwloc_bitmap_iszero(near.get()) ||
      hwloc_bitmap_isequal(near.get(), hwloc_topology_get_topology_cpuset(topology.get())))
    log::info("placement: not bound (the devices are near every core, or hwloc cannot tell where they are)");
  else
    bind(topology.get(), near.get());
}

#else

void place_near(const std::vector<NativeDevice>&) { log::info("placement: not bound (built without hwloc)"); }

void locate(const NativeDevice&, protocol::DeviceRecord&) {}

#endif

}  // namespace hivecl::proxy
