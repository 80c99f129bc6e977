// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pyebpf::net {

// Driver name of an interface ("ena", "virtio_net", "veth"), from the
// SIOCETHTOOL ETHTOOL_GDRVINFO ioctl in the calling thread's network
// namespace; nullopt if the interface does not exist or has no driver info.
std::optional<std::string> ethtool_driver(const std::string& iface);

// The driver's statistics (what `ethtool -S` prints), via SIOCETHTOOL
// ETHTOOL_GSSET_INFO + GSTRINGS + GSTATS. Empty if the driver has none (lo).
std::map<std::string, std::uint64_t> ethtool_stats(const std::string& iface);

}  // namespace pyebpf::net
