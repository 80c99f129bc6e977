// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp/tcp_format.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include "tcp.h"

namespace pyebpf::trackers::tcp {
namespace {

TEST(TcpFormat, AddressesOfBothFamiliesIncludingV4Mapped) {
  const std::uint8_t v4[16] = {127, 0, 0, 1};
  const std::uint8_t v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  const std::uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
  EXPECT_EQ(format_ip(v4, PYEBPF_AF_INET), "127.0.0.1");
  EXPECT_EQ(format_ip(v6, PYEBPF_AF_INET6), "fd00::2");
  EXPECT_EQ(format_ip(mapped, PYEBPF_AF_INET6), "::ffff:10.1.2.3");
  EXPECT_EQ(format_ip(v4, 1), "");
  EXPECT_EQ(family_name(PYEBPF_AF_INET), "AF_INET");
  EXPECT_EQ(family_name(PYEBPF_AF_INET6), "AF_INET6");
  EXPECT_EQ(family_name(1), "AF_1");
}

TEST(TcpFormat, KernelStateNamesMatchTheOriginalTool) {
  EXPECT_EQ(state_name(1), "ESTABLISHED");
  EXPECT_EQ(state_name(2), "SYN_SENT");
  EXPECT_EQ(state_name(7), "CLOSE");
  EXPECT_EQ(state_name(10), "LISTEN");
  EXPECT_EQ(state_name(12), "NEW_SYN_RECV");
  EXPECT_EQ(state_name(0), "STATE_0");
  EXPECT_EQ(state_name(13), "STATE_13");
  EXPECT_EQ(ca_state_name(0), "Open");
  EXPECT_EQ(ca_state_name(3), "Recovery");
  EXPECT_EQ(ca_state_name(4), "Loss");
  EXPECT_EQ(ca_state_name(9), "CA_9");
}

TEST(TcpFormat, EveryLossTypeHasAName) {
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) EXPECT_EQ(loss_event_name(t).find("type_"), std::string::npos) << t;
  EXPECT_EQ(loss_event_name(PYEBPF_LOSS_ZERO_WINDOW), "zero_window");
  EXPECT_EQ(loss_event_name(PYEBPF_LOSS_TYPES), "type_7");
}

TEST(TcpFormat, ConnectOutcomes) {
  const int established = 1, close = 7;
  auto o = classify_connect(established, 0, 40000, false);
  EXPECT_EQ(o.outcome, "success");
  EXPECT_FALSE(o.error);
  o = classify_connect(close, ECONNREFUSED, 40000, false);
  EXPECT_EQ(o.outcome, "refused");
  EXPECT_EQ(o.error, "ECONNREFUSED");
  o = classify_connect(close, ETIMEDOUT, 40000, false);
  EXPECT_EQ(o.outcome, "timeout");
  EXPECT_EQ(o.error, "ETIMEDOUT");
  o = classify_connect(close, EHOSTUNREACH, 40000, false);
  EXPECT_EQ(o.outcome, "error");
  EXPECT_EQ(o.error, "EHOSTUNREACH");
  // Closed by the application before the handshake finished.
  o = classify_connect(close, 0, 40000, true);
  EXPECT_EQ(o.outcome, "aborted");
  EXPECT_FALSE(o.error);
  // Failed inside connect() before a local port was found.
  o = classify_connect(close, 0, 0, true);
  EXPECT_EQ(o.outcome, "error");
  EXPECT_EQ(o.error, "EADDRNOTAVAIL");
  o = classify_connect(close, 0, 0, false);
  EXPECT_EQ(o.outcome, "aborted");
}

TEST(TcpFormat, FilterAddressesNormaliseIpv4ToMapped) {
  auto v4 = parse_filter_ip("10.1.2.3");
  ASSERT_TRUE(v4);
  const std::array<std::uint8_t, 16> mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
  EXPECT_EQ(*v4, mapped);
  EXPECT_EQ(parse_filter_ip("::ffff:10.1.2.3"), mapped);
  auto v6 = parse_filter_ip("fd00:203::2");
  ASSERT_TRUE(v6);
  EXPECT_EQ((*v6)[0], 0xfd);
  EXPECT_EQ((*v6)[15], 2);
  EXPECT_FALSE(parse_filter_ip("example.com"));
  EXPECT_FALSE(parse_filter_ip("10.1.2"));
  EXPECT_FALSE(parse_filter_ip(""));
}

TEST(TcpFormat, ErrnoNames) {
  EXPECT_EQ(errno_name(ECONNREFUSED), "ECONNREFUSED");
  EXPECT_EQ(errno_name(ENETUNREACH), "ENETUNREACH");
  EXPECT_EQ(errno_name(100000), "E100000");
}

}  // namespace
}  // namespace pyebpf::trackers::tcp
