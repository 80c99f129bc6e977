// SPDX-License-Identifier: Apache-2.0
// host_net_health end to end: a workload in a network namespace of its own
// holds TCP sockets in known states; pyebpf must count exactly those.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <set>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

PythonBuild python() {
  return test_pythons(11, 11).front();
}

// Reads pyebpf's stdout (a pipe: these tests read it live) until the next
// host_net_health document.
Json next_snapshot(Pyebpf& pyebpf, std::chrono::seconds timeout = 30s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = pyebpf.child().read_line(1s);
    if (!line) continue;
    auto j = Json::parse(*line, nullptr, false);
    if (!j.is_discarded() && j.value("metric", "") == "host_net_health") return j;
  }
  ADD_FAILURE() << "no host_net_health snapshot; stderr:\n" << pyebpf.stderr_text();
  return Json::object();
}

std::vector<std::string> args(const Workload& w, std::vector<std::string> extra) {
  std::vector<std::string> a{
      "-p",          std::to_string(w.pid()),  "-e", "e2e", "--enable", "host_net_health", "--hnh-interval", "1",
      "--hnh-procs", w.ready().at("proc_name")};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(HostNetHealthE2E, CountsStatesOfTheTargetNamespaceWithWarnings) {
  Workload w(python(), "net_states.py", {"12", "8", "5", "4"});
  const Json& truth = w.ready();
  // Thresholds below what the workload holds, so every rule fires; the same
  // state under the original tool's thresholds must warn about nothing.
  Pyebpf low(args(w, {"--hnh-warn-close-wait", "5", "--hnh-warn-time-wait", "5", "--hnh-warn-syn-sent", "2",
                      "--hnh-warn-fd-util", "40", "--hnh-warn-port-util", "0.01"}),
             /*stdout_pipe=*/true);
  Pyebpf defaults(args(w, {}), /*stdout_pipe=*/true);
  low.wait_ready();
  defaults.wait_ready();
  Json s = next_snapshot(low);
  Json d = next_snapshot(defaults);
  ASSERT_FALSE(s.empty());

  EXPECT_EQ(s.at("netns"), truth.at("netns")) << "the target's namespace, not pyebpf's";
  EXPECT_EQ(s.at("netns_of"), "target");
  // The target and its two Python children, followed as descendants.
  std::set<long> expected_pids{w.pid()}, pids;
  for (const auto& f : truth.at("fds")) expected_pids.insert(f.at("pid").get<long>());
  for (const auto& p : s.at("pids")) pids.insert(p.get<long>());
  EXPECT_EQ(pids, expected_pids);
  EXPECT_EQ(s.at("interface"), "hnh0") << "the default route's interface";
  EXPECT_EQ(s.at("driver"), "veth") << "from SIOCETHTOOL";
  const std::int64_t est =
      truth.at("established").get<std::int64_t>() + truth.at("backlog_connected").get<std::int64_t>();
  EXPECT_EQ(s.at("established_inbound"), est);
  EXPECT_EQ(s.at("established_outbound"), est);
  const std::int64_t tw4 = truth.at("time_wait4"), tw6 = truth.at("time_wait6");
  EXPECT_EQ(s.at("time_wait"), tw4 + tw6) << "IPv4 and IPv6";
  EXPECT_EQ(s.at("close_wait"), truth.at("close_wait"));
  EXPECT_EQ(s.at("fin_wait"), truth.at("close_wait")) << "the peers of the CLOSE_WAIT sockets";
  EXPECT_EQ(s.at("syn_sent"), truth.at("syn_sent"));
  EXPECT_EQ(s.at("syn_recv"), 0);
  EXPECT_EQ(s.at("last_ack"), 0);
  EXPECT_EQ(s.at("closing"), 0);
  EXPECT_EQ(s.at("listen"), truth.at("listen"));

  const std::string dst4 = "127.0.0.1:" + std::to_string(truth.at("port4").get<int>());
  EXPECT_EQ(s.at("max_time_wait_one_dst"), tw4);
  ASSERT_GE(s.at("time_wait_top_dst").size(), 1u);
  EXPECT_EQ(s.at("time_wait_top_dst")[0], (Json{{"dst", dst4}, {"count", tw4}}));
  if (tw6 > 0) {
    ASSERT_EQ(s.at("time_wait_top_dst").size(), 2u);
    EXPECT_EQ(s.at("time_wait_top_dst")[1].at("dst"), "[::1]:" + std::to_string(truth.at("port6").get<int>()));
  }
  // Ephemeral ports held towards the busiest destination: its TIME_WAIT,
  // FIN_WAIT2 (the CLOSE_WAIT peers) and established client sockets.
  const double held = static_cast<double>(tw4 + truth.at("close_wait").get<std::int64_t>() +
                                          truth.at("established").get<std::int64_t>());
  const double port_pct = std::round(100.0 * held / truth.at("ephemeral_ports").get<double>() * 100) / 100;
  EXPECT_DOUBLE_EQ(s.at("port_util_pct").get<double>(), port_pct);
  EXPECT_EQ(s.at("port_util_dst"), dst4);
  for (const char* ena : {"delta_bw_in", "delta_bw_out", "delta_pps", "delta_conntrack", "delta_linklocal",
                          "conntrack_available", "total_bw_in", "total_bw_out", "total_pps"})
    EXPECT_EQ(s.at(ena), -1) << ena << ": veth has no ENA counters";
  EXPECT_GE(s.at("rx_bytes").get<std::int64_t>(), 0);

  // fd usage per process: the worst process's own utilisation.
  ASSERT_EQ(s.at("fd_usage").size(), 1u);
  const Json& fds = s.at("fd_usage")[0];
  const Json& worst = truth.at("fds")[1];
  const Json& other = truth.at("fds")[0];
  EXPECT_EQ(fds.at("pids"), 2);
  EXPECT_EQ(fds.at("fd_count"), worst.at("fd_count").get<int>() + other.at("fd_count").get<int>());
  EXPECT_EQ(fds.at("fd_limit"), 100);
  EXPECT_DOUBLE_EQ(fds.at("fd_util_pct").get<double>(), worst.at("fd_count").get<double>());  // n of 100
  EXPECT_EQ(fds.at("max_pid"), worst.at("pid"));
  ASSERT_EQ(fds.at("processes").size(), 2u);
  EXPECT_EQ(fds.at("processes")[1], (Json{{"pid", other.at("pid")},
                                          {"fd_count", other.at("fd_count")},
                                          {"fd_limit", 1000},
                                          {"fd_util_pct", other.at("fd_count").get<double>() / 10}}));
  EXPECT_DOUBLE_EQ(s.at("fd_util_max_pct").get<double>(), worst.at("fd_count").get<double>());

  auto pct = [](double v) {
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (t.back() == '.') t += '0';
    return t;
  };
  const std::string name = truth.at("proc_name");
  Json expected = {
      "close_wait=" + std::to_string(truth.at("close_wait").get<int>()) + " (possible fd leak)",
      "time_wait to " + dst4 + " = " + std::to_string(tw4) + " (port-exhaustion risk)",
      "ephemeral port utilization " + pct(port_pct) + "% to single dst " + dst4,
      "syn_sent=" + std::to_string(truth.at("syn_sent").get<int>()) + " (outbound handshakes struggling)",
      name + " fd usage " + pct(worst.at("fd_count").get<double>()) + "% (" +
          std::to_string(worst.at("fd_count").get<int>()) + "/100) in pid " +
          std::to_string(worst.at("pid").get<int>()),
  };
  EXPECT_EQ(s.at("warnings"), expected);

  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.at("close_wait"), s.at("close_wait"));
  EXPECT_EQ(d.at("warnings"), Json::array()) << "the original tool's thresholds";
  low.stop();
  defaults.stop();
  EXPECT_EQ(low.exit_status(), 0);
}

TEST(HostNetHealthE2E, InterfaceDeltasCountTrafficOfTheNamespace) {
  Workload w(python(), "net_states.py", {"0", "0", "0", "0"});
  Pyebpf pyebpf(args(w, {"--hnh-interface", "lo"}), /*stdout_pipe=*/true);
  pyebpf.wait_ready();
  Json first = next_snapshot(pyebpf);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.at("interface"), "lo");
  EXPECT_EQ(first.at("driver"), "") << "lo has no ethtool driver info";
  w.go();
  const std::int64_t sent = w.result().at("bytes");
  // Sum the deltas until the bytes show up: only this workload uses this lo.
  std::int64_t tx = 0, rx = 0;
  for (int i = 0; i < 10 && tx < sent; ++i) {
    Json s = next_snapshot(pyebpf);
    ASSERT_FALSE(s.empty());
    EXPECT_GT(s.at("window_s").get<double>(), 0.5);
    tx += s.at("delta_tx_bytes").get<std::int64_t>();
    rx += s.at("delta_rx_bytes").get<std::int64_t>();
  }
  EXPECT_GE(tx, sent);
  EXPECT_LT(tx, sent * 12 / 10) << "headers and ACKs only on top of the payload";
  EXPECT_EQ(rx, tx) << "loopback receives what it sends";
  pyebpf.stop();
}

TEST(HostNetHealthE2E, SelfReportsPyebpfsOwnNamespace) {
  Workload w(python(), "net_states.py", {"3", "0", "0", "0"});
  Pyebpf pyebpf(args(w, {"--hnh-netns", "self"}), /*stdout_pipe=*/true);
  pyebpf.wait_ready();
  Json s = next_snapshot(pyebpf);
  ASSERT_FALSE(s.empty());
  struct stat own {};
  ASSERT_EQ(stat("/proc/self/ns/net", &own), 0);
  EXPECT_EQ(s.at("netns"), own.st_ino);
  EXPECT_NE(s.at("netns"), w.ready().at("netns"));
  EXPECT_EQ(s.at("netns_of"), "self");
  EXPECT_EQ(s.at("pids"), Json::array());
  // The workload's processes live in another namespace but --hnh-netns self
  // reports processes host-wide, like the original tool.
  EXPECT_EQ(s.at("fd_usage")[0].at("pids"), 2);
  pyebpf.stop();
}

}  // namespace
}  // namespace pyebpf::e2e
