// SPDX-License-Identifier: Apache-2.0
// host_net_health: the figures of one snapshot and the warning rules, as pure
// functions of what was read (unit tested without a kernel).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "net/proc_net.hpp"
#include "net/sock_diag.hpp"

namespace pyebpf::trackers::hnh {

struct DstCount {
  std::string dst;  // "ip:port"
  std::uint64_t count = 0;
};

struct ConnectionSummary {
  std::uint64_t established_inbound = 0;  // local port is a listening port
  std::uint64_t established_outbound = 0;
  std::uint64_t time_wait = 0, close_wait = 0, syn_sent = 0, syn_recv = 0;
  std::uint64_t fin_wait = 0;  // FIN_WAIT1 + FIN_WAIT2
  std::uint64_t last_ack = 0, closing = 0, listen = 0, total = 0;
  // Outbound TIME_WAIT sockets per destination ip:port, largest first (top N).
  std::vector<DstCount> time_wait_top;
  std::uint64_t max_time_wait_one_dst = 0;
  std::string max_time_wait_dst;
  // Outbound sockets (any state) holding an ephemeral port, per destination:
  // the 4-tuple space that runs out is (local ip, dst ip, dst port).
  std::uint64_t max_ephemeral_one_dst = 0;
  std::string max_ephemeral_dst;
};

ConnectionSummary summarize_connections(const std::vector<net::TcpSocket>& sockets, const net::PortRange& ports,
                                        std::size_t top_n = 5);

// Percentage rounded to 2 decimals (Python's round(x, 2) of the original).
double round2(double pct);
// "72.5", "0.06": the shortest text of a rounded percentage.
std::string format_pct(double pct);

double port_util_pct(const ConnectionSummary& c, const net::PortRange& ports);

// AWS ENA allowance counters from the driver's ethtool statistics; -1 where
// the driver does not have them (every non-ENA interface).
struct EnaCounters {
  bool available = false;
  std::int64_t bw_in = -1, bw_out = -1, pps = -1, conntrack = -1, linklocal = -1;  // *_allowance_exceeded
  std::int64_t conntrack_available = -1;                                           // a gauge
};
EnaCounters ena_counters(const std::map<std::string, std::uint64_t>& ethtool_stats);
// now - before for the five *_exceeded counters; -1 where either side lacks one.
EnaCounters ena_deltas(const EnaCounters& now, const EnaCounters& before);

struct ProcessFds {
  pid_t pid = 0;
  std::uint64_t fd_count = 0;
  std::int64_t fd_limit = -1;  // soft RLIMIT_NOFILE, -1 unlimited/unknown
  double util_pct = 0;
};
double fd_util_pct(std::uint64_t count, std::int64_t limit);

// Processes of one --hnh-procs name. Utilisation is per process (its fds over
// its own limit); the name's figure is the worst process, not the sum of all
// of them over one limit as the original tool computed.
struct FdUsage {
  std::string proc;
  std::vector<ProcessFds> processes;  // worst first
  std::uint64_t fd_count_total = 0;
  std::int64_t min_limit = -1;
  double max_util_pct = 0;
  pid_t max_pid = 0;
};
FdUsage fd_usage_of(const std::string& proc, std::vector<ProcessFds> processes);

struct Thresholds {  // strict ">" as in the original tool
  std::uint64_t close_wait = 100;
  std::uint64_t time_wait_one_dst = 15000;
  double port_util_pct = 60.0;
  std::uint64_t syn_sent = 30;
  std::uint64_t syn_recv = 100;
  double fd_util_pct = 80.0;
  double conntrack_pct = 80.0;
};

struct Figures {
  ConnectionSummary conns;
  double port_util_pct = 0;
  std::vector<FdUsage> fds;
  EnaCounters ena_delta;  // deltas this interval
  std::int64_t conntrack_count = -1, conntrack_max = -1;
};

// The original tool's rules in its order, then conntrack table usage.
std::vector<std::string> warnings(const Figures& f, const Thresholds& t);

}  // namespace pyebpf::trackers::hnh
