// SPDX-License-Identifier: Apache-2.0
// host_net_health: /proc parsers, connection figures and warning rules.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "net/proc_net.hpp"
#include "net/sock_diag.hpp"
#include "trackers/host_net_health/net_health_report.hpp"

namespace pyebpf {
namespace {

using trackers::hnh::ProcessFds;

TEST(ProcNet, NetDevCountersPerInterface) {
  const char* text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
      "carrier compressed\n"
      "    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0 "
      "         0\n"
      "  eth0: 174369986 3557 1 2    0     0          0         0   167927    2026    3    4    0     0       0 "
      "         0\n"
      "broken: 1 2 3\n";
  auto dev = net::parse_net_dev(text);
  ASSERT_EQ(dev.size(), 2u);
  const auto& eth = dev.at("eth0");
  EXPECT_EQ(eth.rx_bytes, 174369986u);
  EXPECT_EQ(eth.rx_packets, 3557u);
  EXPECT_EQ(eth.rx_errors, 1u);
  EXPECT_EQ(eth.rx_dropped, 2u);
  EXPECT_EQ(eth.tx_bytes, 167927u);
  EXPECT_EQ(eth.tx_packets, 2026u);
  EXPECT_EQ(eth.tx_errors, 3u);
  EXPECT_EQ(eth.tx_dropped, 4u);
}

TEST(ProcNet, DefaultRouteInterfacePrefersLowestIpv4Metric) {
  const char* route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth1\t00000000\t0101A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
      "eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
  EXPECT_EQ(net::default_route_interface(route, ""), "eth0");
  // Not up (flags 0): ignored.
  EXPECT_EQ(net::default_route_interface("x\n"
                                         "eth9\t00000000\t00000000\t0000\t0\t0\t0\t00000000\t0\t0\t0\n",
                                         ""),
            std::nullopt);
}

TEST(ProcNet, DefaultRouteFallsBackToIpv6AndSkipsLo) {
  const char* v6 =
      "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 "
      "ffffffff 00000001 00000000 00200200       lo\n"
      "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 "
      "00000400 00000001 00000000 00000003     ens5\n"
      "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 "
      "00000100 00000001 00000000 00000001     ens5\n";
  EXPECT_EQ(net::default_route_interface("Iface\tDestination\n", v6), "ens5");
  EXPECT_EQ(net::default_route_interface("", ""), std::nullopt);
}

TEST(ProcNet, MaxOpenFilesSoftLimit) {
  const char* limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max cpu time              unlimited            unlimited            seconds   \n"
      "Max open files            1024                 524288               files     \n";
  EXPECT_EQ(net::parse_max_open_files(limits), 1024);
  EXPECT_EQ(net::parse_max_open_files("Max open files            unlimited            unlimited            files\n"),
            -1);
  EXPECT_EQ(net::parse_max_open_files(""), -1);
}

TEST(ProcNet, PortRange) {
  auto r = net::parse_port_range("32768\t60999\n");
  EXPECT_EQ(r.low, 32768u);
  EXPECT_EQ(r.high, 60999u);
  EXPECT_EQ(r.size(), 28232u);
  EXPECT_EQ(net::parse_port_range("1024 65535").size(), 64512u);
  EXPECT_EQ(net::parse_port_range("garbage").size(), 28232u) << "kernel default";
  EXPECT_EQ(net::parse_port_range("").size(), 28232u);
}

net::TcpSocket v4(std::uint8_t state, std::uint16_t lport, const char* rip, std::uint16_t rport) {
  net::TcpSocket s;
  s.family = AF_INET;
  s.state = state;
  s.local_port = lport;
  s.remote_port = rport;
  unsigned a, b, c, d;
  std::sscanf(rip, "%u.%u.%u.%u", &a, &b, &c, &d);
  s.remote = {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b), static_cast<std::uint8_t>(c),
              static_cast<std::uint8_t>(d)};
  return s;
}

TEST(SockDiag, FormatsEndpoints) {
  net::TcpSocket s = v4(net::kTcpEstablished, 1, "10.0.0.5", 443);
  EXPECT_EQ(net::format_endpoint(s.family, s.remote, s.remote_port), "10.0.0.5:443");
  std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8};
  v6[15] = 1;
  EXPECT_EQ(net::format_endpoint(AF_INET6, v6, 80), "[2001:db8::1]:80");
  std::array<std::uint8_t, 16> mapped{};
  mapped[10] = mapped[11] = 0xff;
  mapped[12] = 127;
  mapped[15] = 1;
  EXPECT_EQ(net::format_endpoint(AF_INET6, mapped, 8000), "127.0.0.1:8000") << "v4-mapped prints as IPv4";
}

TEST(ConnectionSummary, ClassifiesStatesAndDirections) {
  net::PortRange ports{32768, 60999};
  std::vector<net::TcpSocket> s = {
      v4(net::kTcpListen, 8000, "0.0.0.0", 0),
      v4(net::kTcpEstablished, 8000, "10.0.0.9", 40000),  // inbound: local port listens
      v4(net::kTcpEstablished, 8000, "10.0.0.9", 40001),
      v4(net::kTcpEstablished, 40002, "10.0.0.5", 5432),  // outbound
      v4(net::kTcpTimeWait, 40003, "10.0.0.5", 5432),
      v4(net::kTcpTimeWait, 40004, "10.0.0.5", 5432),
      v4(net::kTcpTimeWait, 40005, "10.0.0.5", 6379),  // same host, another service
      v4(net::kTcpTimeWait, 8000, "10.0.0.9", 40006),  // inbound TIME_WAIT: holds no ephemeral port
      v4(net::kTcpCloseWait, 8000, "10.0.0.9", 40007),
      v4(net::kTcpSynSent, 40008, "10.0.0.6", 80),
      v4(net::kTcpSynRecv, 8000, "10.0.0.9", 40009),
      v4(net::kTcpNewSynRecv, 8000, "10.0.0.9", 40010),
      v4(net::kTcpFinWait1, 40011, "10.0.0.5", 5432),
      v4(net::kTcpFinWait2, 40012, "10.0.0.5", 5432),
      v4(net::kTcpLastAck, 8000, "10.0.0.9", 40013),
      v4(net::kTcpClosing, 8000, "10.0.0.9", 40014),
      v4(net::kTcpEstablished, 1000, "10.0.0.5", 5432),  // explicitly bound below the range
  };
  auto c = trackers::hnh::summarize_connections(s, ports, 1);
  EXPECT_EQ(c.listen, 1u);
  EXPECT_EQ(c.established_inbound, 2u);
  EXPECT_EQ(c.established_outbound, 2u);
  EXPECT_EQ(c.time_wait, 4u);
  EXPECT_EQ(c.close_wait, 1u);
  EXPECT_EQ(c.syn_sent, 1u);
  EXPECT_EQ(c.syn_recv, 2u) << "full and request sockets";
  EXPECT_EQ(c.fin_wait, 2u);
  EXPECT_EQ(c.last_ack, 1u);
  EXPECT_EQ(c.closing, 1u);
  EXPECT_EQ(c.total, s.size());
  // TIME_WAIT per destination ip:port, outbound only; top 1 kept.
  EXPECT_EQ(c.max_time_wait_one_dst, 2u);
  EXPECT_EQ(c.max_time_wait_dst, "10.0.0.5:5432");
  ASSERT_EQ(c.time_wait_top.size(), 1u);
  EXPECT_EQ(c.time_wait_top[0].dst, "10.0.0.5:5432");
  // Ephemeral ports towards 10.0.0.5:5432: established, 2 TIME_WAIT, 2 FIN_WAIT
  // (the socket bound to port 1000 is outside the range).
  EXPECT_EQ(c.max_ephemeral_one_dst, 5u);
  EXPECT_EQ(c.max_ephemeral_dst, "10.0.0.5:5432");
  EXPECT_DOUBLE_EQ(trackers::hnh::port_util_pct(c, ports), 0.02);  // 5 / 28232
}

TEST(FdUsage, UtilisationIsPerProcessNotASumOverOneLimit) {
  auto u = trackers::hnh::fd_usage_of("gunicorn", {ProcessFds{10, 500, 1024}, ProcessFds{11, 900, 1024},
                                                   ProcessFds{12, 30, 100}, ProcessFds{13, 5, -1}});
  EXPECT_EQ(u.fd_count_total, 1435u);
  EXPECT_EQ(u.min_limit, 100);
  EXPECT_DOUBLE_EQ(u.max_util_pct, 87.89);  // pid 11: 900/1024; the original said 1435/100 = 1435%
  EXPECT_EQ(u.max_pid, 11);
  ASSERT_EQ(u.processes.size(), 4u);
  EXPECT_EQ(u.processes[1].pid, 10);
  EXPECT_DOUBLE_EQ(u.processes[1].util_pct, 48.83);
  EXPECT_DOUBLE_EQ(u.processes[3].util_pct, 0.0) << "no limit";
  auto none = trackers::hnh::fd_usage_of("nginx", {});
  EXPECT_EQ(none.min_limit, -1);
  EXPECT_EQ(none.max_util_pct, 0.0);
}

TEST(Ena, CountersAndDeltas) {
  auto absent = trackers::hnh::ena_counters({{"rx_queue_0_packets", 5}});
  EXPECT_FALSE(absent.available);
  EXPECT_EQ(absent.bw_in, -1);
  EXPECT_EQ(absent.conntrack_available, -1);
  auto before = trackers::hnh::ena_counters({{"bw_in_allowance_exceeded", 10},
                                             {"bw_out_allowance_exceeded", 0},
                                             {"pps_allowance_exceeded", 7},
                                             {"conntrack_allowance_exceeded", 0},
                                             {"linklocal_allowance_exceeded", 0},
                                             {"conntrack_allowance_available", 5000}});
  auto now = before;
  now.bw_in = 13;
  now.conntrack_available = 4000;
  auto d = trackers::hnh::ena_deltas(now, before);
  EXPECT_TRUE(d.available);
  EXPECT_EQ(d.bw_in, 3);
  EXPECT_EQ(d.pps, 0);
  EXPECT_EQ(d.conntrack_available, 4000);
  EXPECT_EQ(trackers::hnh::ena_deltas(absent, absent).bw_in, -1);
}

TEST(Warnings, RulesInTheOriginalOrderWithStrictThresholds) {
  trackers::hnh::Figures f;
  trackers::hnh::Thresholds t;  // the original tool's values
  EXPECT_TRUE(trackers::hnh::warnings(f, t).empty());

  f.conns.close_wait = 100;  // not > 100
  f.conns.max_time_wait_one_dst = 15000;
  f.port_util_pct = 60.0;
  f.conns.syn_sent = 30;
  f.conns.syn_recv = 100;
  f.fds = {trackers::hnh::fd_usage_of("nginx", {ProcessFds{7, 80, 100}})};
  f.ena_delta.bw_in = 0;
  f.conntrack_count = 80;
  f.conntrack_max = 100;
  EXPECT_TRUE(trackers::hnh::warnings(f, t).empty()) << "thresholds are strict";

  f.conns.close_wait = 101;
  f.conns.max_time_wait_one_dst = 15001;
  f.conns.max_time_wait_dst = "10.0.0.5:5432";
  f.port_util_pct = 72.5;
  f.conns.max_ephemeral_dst = "10.0.0.5:5432";
  f.conns.syn_sent = 31;
  f.conns.syn_recv = 101;
  f.fds.push_back(trackers::hnh::fd_usage_of("gunicorn", {ProcessFds{9, 81, 100}, ProcessFds{8, 10, 100}}));
  f.ena_delta.pps = 4;
  f.conntrack_count = 90;
  std::vector<std::string> expected = {
      "close_wait=101 (possible fd leak)",
      "time_wait to 10.0.0.5:5432 = 15001 (port-exhaustion risk)",
      "ephemeral port utilization 72.5% to single dst 10.0.0.5:5432",
      "syn_sent=31 (outbound handshakes struggling)",
      "syn_recv=101 (inbound handshakes struggling)",
      "gunicorn fd usage 81.0% (81/100) in pid 9",
      "aws throttling active this interval",
      "conntrack table 90.0% full (90/100)",
  };
  EXPECT_EQ(trackers::hnh::warnings(f, t), expected);

  t.close_wait = 200;  // thresholds are flags
  EXPECT_EQ(trackers::hnh::warnings(f, t).size(), expected.size() - 1);
}

TEST(Warnings, PercentagesPrintLikePython) {
  EXPECT_EQ(trackers::hnh::format_pct(60.0), "60.0");
  EXPECT_EQ(trackers::hnh::format_pct(0.0886), "0.09");
  EXPECT_EQ(trackers::hnh::format_pct(72.5), "72.5");
  EXPECT_EQ(trackers::hnh::format_pct(87.890625), "87.89");
}

}  // namespace
}  // namespace pyebpf
