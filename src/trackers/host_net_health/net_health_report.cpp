// SPDX-License-Identifier: Apache-2.0
#include "trackers/host_net_health/net_health_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace pyebpf::trackers::hnh {
namespace {

std::vector<DstCount> sorted_counts(const std::unordered_map<std::string, std::uint64_t>& counts) {
  std::vector<DstCount> out;
  out.reserve(counts.size());
  for (const auto& [dst, n] : counts) out.push_back({dst, n});
  std::sort(out.begin(), out.end(), [](const DstCount& a, const DstCount& b) {
    return a.count != b.count ? a.count > b.count : a.dst < b.dst;
  });
  return out;
}

// Adds a socket to its state's count (established ones by direction).
void count_state(ConnectionSummary& c, std::uint8_t state, bool inbound) {
  switch (state) {
    case net::kTcpEstablished:
      ++(inbound ? c.established_inbound : c.established_outbound);
      break;
    case net::kTcpTimeWait:
      ++c.time_wait;
      break;
    case net::kTcpCloseWait:
      ++c.close_wait;
      break;
    case net::kTcpSynSent:
      ++c.syn_sent;
      break;
    case net::kTcpSynRecv:
    case net::kTcpNewSynRecv:
      ++c.syn_recv;
      break;
    case net::kTcpFinWait1:
    case net::kTcpFinWait2:
      ++c.fin_wait;
      break;
    case net::kTcpLastAck:
      ++c.last_ack;
      break;
    case net::kTcpClosing:
      ++c.closing;
      break;
    case net::kTcpListen:
      ++c.listen;
      break;
    default:
      break;
  }
}

}  // namespace

ConnectionSummary summarize_connections(const std::vector<net::TcpSocket>& sockets, const net::PortRange& ports,
                                        std::size_t top_n) {
  ConnectionSummary c;
  std::set<std::uint16_t> listening;
  for (const auto& s : sockets) {
    if (s.state == net::kTcpListen) listening.insert(s.local_port);
  }
  std::unordered_map<std::string, std::uint64_t> tw_per_dst, ephemeral_per_dst;
  for (const auto& s : sockets) {
    ++c.total;
    const bool inbound = listening.count(s.local_port) > 0;
    count_state(c, s.state, inbound);
    if (inbound || s.state == net::kTcpClose) continue;  // a listening socket is inbound too
    std::string dst = net::format_endpoint(s.family, s.remote, s.remote_port);
    if (s.state == net::kTcpTimeWait) ++tw_per_dst[dst];
    if (s.local_port >= ports.low && s.local_port <= ports.high) ++ephemeral_per_dst[dst];
  }
  auto tw = sorted_counts(tw_per_dst);
  if (!tw.empty()) {
    c.max_time_wait_one_dst = tw.front().count;
    c.max_time_wait_dst = tw.front().dst;
  }
  if (tw.size() > top_n) tw.resize(top_n);
  c.time_wait_top = std::move(tw);
  auto eph = sorted_counts(ephemeral_per_dst);
  if (!eph.empty()) {
    c.max_ephemeral_one_dst = eph.front().count;
    c.max_ephemeral_dst = eph.front().dst;
  }
  return c;
}

double round2(double pct) {
  return std::round(pct * 100.0) / 100.0;
}

std::string format_pct(double pct) {
  // Python's str() of a float, as the original tool printed: "60.0", "0.09"
  std::string text = fmt::format("{}", round2(pct));
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

double port_util_pct(const ConnectionSummary& c, const net::PortRange& ports) {
  if (ports.size() == 0) return 0;
  return round2(100.0 * static_cast<double>(c.max_ephemeral_one_dst) / ports.size());
}

EnaCounters ena_counters(const std::map<std::string, std::uint64_t>& stats) {
  EnaCounters e;
  auto get = [&](const char* name, std::int64_t& out) {
    auto it = stats.find(name);
    if (it == stats.end()) return;
    out = static_cast<std::int64_t>(it->second);
    e.available = true;
  };
  get("bw_in_allowance_exceeded", e.bw_in);
  get("bw_out_allowance_exceeded", e.bw_out);
  get("pps_allowance_exceeded", e.pps);
  get("conntrack_allowance_exceeded", e.conntrack);
  get("linklocal_allowance_exceeded", e.linklocal);
  get("conntrack_allowance_available", e.conntrack_available);
  return e;
}

EnaCounters ena_deltas(const EnaCounters& now, const EnaCounters& before) {
  auto d = [](std::int64_t a, std::int64_t b) -> std::int64_t {
    return a < 0 || b < 0 ? -1 : std::max<std::int64_t>(a - b, 0);
  };
  EnaCounters out;
  out.available = now.available && before.available;
  out.bw_in = d(now.bw_in, before.bw_in);
  out.bw_out = d(now.bw_out, before.bw_out);
  out.pps = d(now.pps, before.pps);
  out.conntrack = d(now.conntrack, before.conntrack);
  out.linklocal = d(now.linklocal, before.linklocal);
  out.conntrack_available = now.conntrack_available;
  return out;
}

double fd_util_pct(std::uint64_t count, std::int64_t limit) {
  return limit > 0 ? round2(100.0 * static_cast<double>(count) / static_cast<double>(limit)) : 0.0;
}

FdUsage fd_usage_of(const std::string& proc, std::vector<ProcessFds> processes) {
  FdUsage u;
  u.proc = proc;
  for (auto& p : processes) {
    p.util_pct = fd_util_pct(p.fd_count, p.fd_limit);
    u.fd_count_total += p.fd_count;
    if (p.fd_limit > 0 && (u.min_limit < 0 || p.fd_limit < u.min_limit)) u.min_limit = p.fd_limit;
  }
  std::sort(processes.begin(), processes.end(), [](const ProcessFds& a, const ProcessFds& b) {
    return a.util_pct != b.util_pct ? a.util_pct > b.util_pct : a.pid < b.pid;
  });
  if (!processes.empty()) {
    u.max_util_pct = processes.front().util_pct;
    u.max_pid = processes.front().pid;
  }
  u.processes = std::move(processes);
  return u;
}

std::vector<std::string> warnings(const Figures& f, const Thresholds& t) {
  std::vector<std::string> w;
  const auto& c = f.conns;
  if (c.close_wait > t.close_wait) w.push_back(fmt::format("close_wait={} (possible fd leak)", c.close_wait));
  if (c.max_time_wait_one_dst > t.time_wait_one_dst)
    w.push_back(
        fmt::format("time_wait to {} = {} (port-exhaustion risk)", c.max_time_wait_dst, c.max_time_wait_one_dst));
  if (f.port_util_pct > t.port_util_pct)
    w.push_back(fmt::format("ephemeral port utilization {}% to single dst {}", format_pct(f.port_util_pct),
                            c.max_ephemeral_dst));
  if (c.syn_sent > t.syn_sent) w.push_back(fmt::format("syn_sent={} (outbound handshakes struggling)", c.syn_sent));
  if (c.syn_recv > t.syn_recv) w.push_back(fmt::format("syn_recv={} (inbound handshakes struggling)", c.syn_recv));
  for (const auto& u : f.fds) {
    if (u.processes.empty() || u.max_util_pct <= t.fd_util_pct) continue;
    const auto& p = u.processes.front();
    w.push_back(fmt::format("{} fd usage {}% ({}/{}) in pid {}", u.proc, format_pct(p.util_pct), p.fd_count, p.fd_limit,
                            p.pid));
  }
  const auto& e = f.ena_delta;
  if (e.bw_in > 0 || e.bw_out > 0 || e.pps > 0 || e.conntrack > 0 || e.linklocal > 0)
    w.push_back("aws throttling active this interval");
  if (f.conntrack_count >= 0 && f.conntrack_max > 0) {
    double pct = round2(100.0 * static_cast<double>(f.conntrack_count) / static_cast<double>(f.conntrack_max));
    if (pct > t.conntrack_pct)
      w.push_back(fmt::format("conntrack table {}% full ({}/{})", format_pct(pct), f.conntrack_count, f.conntrack_max));
  }
  return w;
}

}  // namespace pyebpf::trackers::hnh
