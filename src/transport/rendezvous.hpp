// The rendezvous directory of a cluster (config key cluster_dir): the launcher puts
// ompi-server's URI there, and every proxy publishes a record of itself (port name,
// node, watchdog address, its devices with all their properties) as
// proxies/<node>-<pid>.proxy. Clients read it to list devices without any MPI.
#pragma once

#include <string>
#include <vector>

#include "protocol/messages.hpp"

namespace hivecl::transport {

std::string ompi_server_uri_path(const std::string& cluster_dir);
std::string proxies_path(const std::string& cluster_dir);

// Writes the record atomically; returns the file's path, or "" on failure.
std::string publish_proxy(const std::string& cluster_dir, const protocol::ProxyRecord& record);

// The records of the cluster's proxies, ordered by node then file name; unreadable records
// and records of proxies that are known to be dead (same node, process gone) are skipped.
std::vector<protocol::ProxyRecord> discover_proxies(const std::string& cluster_dir);

// Whether the first "tcp://host[,host...]:port" endpoint in ompi-server's URI file accepts a
// connection on one of its addresses (ompi-server lists one per interface): lets a client check
// that the server is up before MPI_Init (which only warns, and later connects hang, when it is not).
bool ompi_server_reachable(const std::string& cluster_dir);

std::string node_name();

}  // namespace hivecl::transport
