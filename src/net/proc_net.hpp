// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pyebpf::net {

// One line of /proc/net/dev.
struct InterfaceCounters {
  std::uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  std::uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
};

// /proc/net/dev: interface name -> counters (malformed lines skipped).
std::map<std::string, InterfaceCounters> parse_net_dev(std::string_view text);

// The interface of the default route: the IPv4 one with the lowest metric in
// /proc/net/route, else the IPv6 one in /proc/net/ipv6_route (::/0, not lo).
std::optional<std::string> default_route_interface(std::string_view route, std::string_view ipv6_route);

// The soft "Max open files" limit from /proc/PID/limits; -1 if unlimited or absent.
std::int64_t parse_max_open_files(std::string_view limits);

// net.ipv4.ip_local_port_range ("32768\t60999"); the kernel default if unreadable.
struct PortRange {
  std::uint32_t low = 32768, high = 60999;
  std::uint32_t size() const { return high >= low ? high - low + 1 : 0; }
};
PortRange parse_port_range(std::string_view text);

}  // namespace pyebpf::net
