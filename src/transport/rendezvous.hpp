// The rendezvous directory of a cluster (config key cluster_dir): the launcher puts
// ompi-server's URI there, and every proxy publishes a record of itself (node, watchdog
// address, its devices with all their properties; MPI ports are handed out per client by
// the watchdog) as
// proxies/<node>-<pid>.proxy, and its live state as proxies/<node>-<pid>.status.
// Clients read the records to list devices without any MPI. A proxy that admits no more
// clients but still serves its sessions (its MPI accept was wedged) renames its record to
// proxies/<node>-<pid>.draining: clients no longer see it, `hivecl-proxy --status` does.
#pragma once

#include <string>
#include <vector>

#include "protocol/messages.hpp"

namespace hivecl::transport {

std::string ompi_server_uri_path(const std::string& cluster_dir);
std::string proxies_path(const std::string& cluster_dir);

// Writes the record atomically; returns the file's path, or "" on failure.
std::string publish_proxy(const std::string& cluster_dir, const protocol::ProxyRecord& record);

// A proxy's live state (sessions and their counters) next to its record, rewritten while it
// serves and removed when it stops; read_status is false when there is none.
bool publish_status(const std::string& cluster_dir, const protocol::ProxyRecord& record,
                    const protocol::ProxyStatus& status);
void withdraw_status(const std::string& cluster_dir, const protocol::ProxyRecord& record);
bool read_status(const std::string& cluster_dir, const protocol::ProxyRecord& record, protocol::ProxyStatus& status);

// Hides the proxy's record from clients, keeping it as draining (false if it could not).
bool mark_draining(const std::string& cluster_dir, const protocol::ProxyRecord& record);
void withdraw_draining(const std::string& cluster_dir, const protocol::ProxyRecord& record);

enum class ProxyState { serving, draining };

// The records of the cluster's proxies in `state`, ordered by node then file name; unreadable
// records and records of proxies that are known to be dead (same node, process gone) are skipped.
std::vector<protocol::ProxyRecord> discover_proxies(const std::string& cluster_dir,
                                                    ProxyState state = ProxyState::serving);

// Whether the first "tcp://host[,host...]:port" endpoint in ompi-server's URI file accepts a
// connection on one of its addresses (ompi-server lists one per interface): lets a client check
// that the server is up before MPI_Init (which only warns, and later connects hang, when it is not).
bool ompi_server_reachable(const std::string& cluster_dir);

}  // namespace hivecl::transport
