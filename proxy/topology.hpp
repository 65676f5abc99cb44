// Where the proxy runs on its node: near its GPUs. hwloc finds the cores local to each
// device's PCI slot (cl_khr_pci_bus_info or the vendors' queries, then sysfs); the proxy
// binds itself there, so its threads and the memory it allocates from then on (the staging
// rings, the page-locked wrappers of shared segments) sit on the GPU's NUMA node.
#pragma once

#include <vector>

#include "proxy/server.hpp"

namespace hivecl::proxy {

// Binds the process to the cores near `devices` (all of them) and logs the choice; does
// nothing, saying why, where they have no PCI locality (CPU devices) or span the machine.
void place_near(const std::vector<NativeDevice>& devices);

// The device's PCI bus id and NUMA node in `record`, where hwloc can tell.
void locate(const NativeDevice& device, protocol::DeviceRecord& record);

}  // namespace hivecl::proxy
