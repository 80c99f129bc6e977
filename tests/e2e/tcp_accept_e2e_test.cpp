// SPDX-License-Identifier: Apache-2.0
// tcp_accept end to end: a real Python server that accepts slowly; the
// workload measures how long each connection waited to be accepted.
#include <gtest/gtest.h>

#include <algorithm>

#include "tcp_e2e.hpp"

namespace pyebpf::e2e {
namespace {

struct AcceptCase {
  PythonBuild python;
  std::string family;  // "4" or "6"
};

void PrintTo(const AcceptCase& c, std::ostream* os) {
  *os << c.python.label << " IPv" << c.family;
}

class TcpAcceptE2E : public ::testing::TestWithParam<AcceptCase> {};

TEST_P(TcpAcceptE2E, DwellQueuesAndHandshakeMatchTheServer) {
  const auto& param = GetParam();
  Workload workload(param.python, "tcp_accepts.py", {param.family, "4", "0.3", "0.2"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "tcp_accept", "tcp_loss"});
  Json truth = profile(workload, pyebpf, std::chrono::seconds(90));

  auto events = pyebpf.events("tcp_accept");
  const auto& accepted = truth.at("accepted");
  ASSERT_EQ(events.size(), accepted.size()) << pyebpf.stderr_text();
  long previous_dwell = 0;
  for (const auto& c : accepted) {
    SCOPED_TRACE(c.dump());
    auto matches = where(events, [&](const Json& e) {
      return e.at("peer_port") == c.at("peer_port") && e.at("local_port") == c.at("local_port");
    });
    ASSERT_EQ(matches.size(), 1u);
    const Json& e = matches[0];
    SCOPED_TRACE(e.dump());
    // Null when the BPF side missed the handshake's completion or its RTT.
    for (const char* field : {"accept_dwell_us", "handshake_rtt_us", "synack_retransmits"}) {
      ASSERT_TRUE(e.at(field).is_number()) << field << " is null\n" << pyebpf.stderr_text();
    }
    EXPECT_EQ(e.at("pid"), truth.at("pid"));
    EXPECT_EQ(e.at("tid"), truth.at("acceptor_tid"));
    EXPECT_EQ(e.at("thread_name"), "SlowAcceptor");
    EXPECT_EQ(e.at("family"), param.family == "6" ? "AF_INET6" : "AF_INET");
    EXPECT_EQ(e.at("accept_queue_max"), truth.at("backlog"));
    EXPECT_EQ(e.at("syn_queue_len"), 0);
    if (c.value("slow", false)) {
      // The first SYN-ACK was dropped: the handshake took a retransmission,
      // ~1 s, which the client saw as its connect() time.
      const Json& slow = truth.at("slow");
      EXPECT_GE(e.at("synack_retransmits").get<int>(), 1);
      EXPECT_GT(e.at("handshake_rtt_us").get<long>(), 900'000);
      EXPECT_NEAR(e.at("handshake_rtt_us").get<double>(), slow.at("connect_us").get<double>(), 50'000);
      EXPECT_LT(e.at("accept_dwell_us").get<long>(), 500'000);
      continue;
    }
    // Accept-queue time: handshake complete (the client's connect() returned)
    // -> the server's accept() returned.
    const long dwell = e.at("accept_dwell_us");
    const long truth_dwell = c.at("dwell_us");
    EXPECT_NEAR(static_cast<double>(dwell), static_cast<double>(truth_dwell), std::max(20'000.0, truth_dwell * 0.05));
    EXPECT_GT(dwell, previous_dwell) << "later accepts waited longer";
    previous_dwell = dwell;
    EXPECT_EQ(e.at("accept_queue_len"), c.at("queued_after"));
    EXPECT_GT(e.at("handshake_rtt_us").get<long>(), 0);
    EXPECT_LT(e.at("handshake_rtt_us").get<long>(), 100'000) << "loopback handshake";
    EXPECT_EQ(e.at("synack_retransmits"), 0);
  }

  // The SYN-ACK retransmission, on a listener created before tracing started:
  // attributed to the process (the thread is unknown: tid 0).
  const Json& slow = truth.at("slow");
  auto synack = where(pyebpf.events("tcp_loss"), [&](const Json& e) {
    return e.at("event") == "synack_retransmit" && e.at("src_port") == slow.at("local_port") &&
           e.at("dst_port") == slow.at("peer_port");
  });
  ASSERT_GE(synack.size(), 1u) << pyebpf.stderr_text();
  EXPECT_EQ(synack[0].at("pid"), truth.at("pid"));
  EXPECT_EQ(synack[0].at("tid"), 0);
  EXPECT_EQ(synack[0].at("owner_known"), true);
  EXPECT_EQ(synack[0].at("synack_attempt"), 1);
  EXPECT_NE(pyebpf.stderr_text().find("TCP sockets the targets held before tracing attributed"), std::string::npos);
}

std::vector<AcceptCase> cases() {
  std::vector<AcceptCase> out;
  for (const auto& python : tcp_pythons()) {
    for (const char* family : {"4", "6"}) out.push_back({python, family});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pythons, TcpAcceptE2E, ::testing::ValuesIn(cases()), [](const auto& info) {
  return build_test_name(info.param.python) + "_ipv" + info.param.family;
});

}  // namespace
}  // namespace pyebpf::e2e
