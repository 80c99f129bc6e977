// SPDX-License-Identifier: Apache-2.0
// tcp_connect end to end: a real Python client connecting over IPv4, IPv6 and
// v4-mapped IPv6 to loopback listeners, to closed ports, and into a namespace
// that drops its SYNs; each connect's ground truth comes from the workload.
#include <gtest/gtest.h>

#include "tcp_e2e.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

class TcpConnectE2E : public ::testing::TestWithParam<PythonBuild> {
 protected:
  std::vector<std::string> args(pid_t pid, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"-p", std::to_string(pid), "-e", "e2e", "--enable", "tcp_connect"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

TEST_P(TcpConnectE2E, EveryConnectIsReportedWithItsOutcomeAddressesAndThread) {
  Workload workload(GetParam(), "tcp_connects.py");
  // --no-children: the workload's child process is then no target (by
  // default -p follows children), and its connect must not be reported.
  Pyebpf pyebpf(args(workload.pid(), {"--no-children"}));
  Json truth = profile(workload, pyebpf, std::chrono::seconds(90));

  auto events = pyebpf.events("tcp_connect");
  ASSERT_EQ(truth.at("attempts").size(), 8u);
  for (const auto& a : truth.at("attempts")) {
    SCOPED_TRACE(a.dump());
    auto matches = where(events, [&](const Json& e) {
      return e.at("tid") == a.at("tid") && e.at("dst_ip") == a.at("dst_ip") && e.at("dst_port") == a.at("dst_port");
    });
    ASSERT_EQ(matches.size(), 1u)
        << "events of this thread: "
        << Json(where(events, [&](const Json& e) { return e.at("tid") == a.at("tid"); })).dump() << "\n"
        << pyebpf.stderr_text();
    const Json& e = matches[0];
    const std::string expect = a.at("expect");
    EXPECT_EQ(e.at("pid"), truth.at("pid"));
    EXPECT_EQ(e.at("thread_name"), a.at("thread"));
    EXPECT_EQ(e.at("family"), a.at("family"));
    EXPECT_EQ(e.at("outcome"), expect);
    EXPECT_GT(e.at("src_port").get<int>(), 0);
    const long app_us = a.at("duration_us");
    if (expect == "success") {
      ASSERT_TRUE(a.at("errno").is_null());
      EXPECT_EQ(e.at("src_ip"), a.at("src_ip"));
      EXPECT_EQ(e.at("src_port"), a.at("src_port"));
      EXPECT_GT(e.at("srtt_us").get<long>(), 0);
      // SYN sent -> ESTABLISHED happens inside the application's connect().
      EXPECT_GT(e.at("handshake_us").get<long>(), 0);
      EXPECT_LE(e.at("handshake_us").get<long>(), app_us);
      EXPECT_TRUE(e.at("error").is_null());
      EXPECT_EQ(e.at("syn_retransmits"), 0);
    } else {
      EXPECT_TRUE(e.at("handshake_us").is_null()) << "a failed connect has no handshake time";
      EXPECT_EQ(e.at("srtt_us"), 0);
    }
    if (expect == "refused") {
      EXPECT_EQ(a.at("errno"), "ECONNREFUSED");
      EXPECT_EQ(e.at("error"), "ECONNREFUSED");
    }
    if (expect == "timeout") {
      // TCP_SYNCNT=1: the SYN, one retransmission, ETIMEDOUT ~3 s later.
      EXPECT_EQ(a.at("errno"), "ETIMEDOUT");
      EXPECT_EQ(e.at("error"), "ETIMEDOUT");
      EXPECT_GE(e.at("syn_retransmits").get<int>(), 1);
      EXPECT_GT(e.at("duration_us").get<long>(), 2'500'000);
      EXPECT_LE(e.at("duration_us").get<long>(), app_us);
      EXPECT_NEAR(e.at("duration_us").get<double>(), static_cast<double>(app_us), 200'000);
    }
    if (expect == "aborted") {
      // The application's own 0.3 s timeout, then close(): no kernel error.
      EXPECT_EQ(a.at("errno"), "app-timeout");
      EXPECT_TRUE(e.at("error").is_null());
      EXPECT_NEAR(e.at("duration_us").get<double>(), static_cast<double>(app_us), 100'000);
    }
  }
  // Nothing else: in particular not the connect of the child process, which is no target here.
  EXPECT_EQ(events.size(), truth.at("attempts").size());
  for (const auto& e : events) EXPECT_EQ(e.at("pid"), truth.at("pid"));
}

TEST_P(TcpConnectE2E, HostScopeAlsoReportsProcessesThatAreNotTargets) {
  Workload workload(GetParam(), "tcp_connects.py");
  Pyebpf pyebpf(args(workload.pid(), {"tcp_loss", "--net-scope", "host"}));
  Json truth = profile(workload, pyebpf, std::chrono::seconds(90));

  const Json& child = truth.at("child");
  auto from_child = where(pyebpf.events("tcp_connect"), [&](const Json& e) { return e.at("pid") == child.at("pid"); });
  ASSERT_EQ(from_child.size(), 1u) << pyebpf.stderr_text();
  EXPECT_EQ(from_child[0].at("src_port"), child.at("src_port"));
  EXPECT_EQ(from_child[0].at("outcome"), "success");
  EXPECT_NE(pyebpf.stderr_text().find("every TCP socket on the host"), std::string::npos);

  // The kernel's RST for a SYN to a closed port belongs to no socket: reported
  // from the packet it answers, with no owner, only in host scope.
  for (const auto& a : truth.at("attempts")) {
    if (a.at("expect") != "refused") continue;
    auto rst = where(pyebpf.events("tcp_loss"), [&](const Json& e) {
      return e.at("event") == "send_rst" && e.at("src_ip") == a.at("dst_ip") && e.at("src_port") == a.at("dst_port");
    });
    ASSERT_EQ(rst.size(), 1u) << a.dump();
    EXPECT_EQ(rst[0].at("owner_known"), false);
    EXPECT_EQ(rst[0].at("pid"), 0);
    EXPECT_EQ(rst[0].at("rst_reason"), "NO_SOCKET");
    EXPECT_EQ(rst[0].at("family"), a.at("family"));
    EXPECT_TRUE(rst[0].at("srtt_us").is_null());
    EXPECT_GT(rst[0].at("netns").get<long>(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Pythons, TcpConnectE2E, ::testing::ValuesIn(tcp_pythons()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
