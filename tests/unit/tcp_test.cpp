// SPDX-License-Identifier: Apache-2.0
// The TCP ring buffer's records (connect, accept, loss, thread) decoded into
// events from synthetic BPF structs; the flags the TCP trackers share.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "btf_layout.hpp"
#include "sinks/capture_sink.hpp"
#include "tcp.skel.h"
#include "test_support.hpp"
#include "trackers/tcp/tcp.hpp"
#include "trackers/tcp/tcp_events.hpp"

namespace pyebpf::trackers {
namespace {

using Json = nlohmann::ordered_json;

pyebpf_tcp_addrs v4(const char* local, std::uint16_t lport, const char* remote, std::uint16_t rport) {
  pyebpf_tcp_addrs a{};
  inet_pton(AF_INET, local, a.saddr);
  inet_pton(AF_INET, remote, a.daddr);
  a.sport = lport;
  a.dport = rport;
  a.family = PYEBPF_AF_INET;
  a.netns = 4026531833u;
  return a;
}

struct TcpDecoding : ::testing::Test {
  test::DecoderFixture f;
  TcpDecoder decoder{{"NOT_SPECIFIED", "NO_SOCKET"}};
  sinks::CaptureSink sink;

  template <typename Event>
  Decoded decode(const Event& ev, std::size_t size = sizeof(Event)) {
    const sinks::Record* out = nullptr;
    Decoded d = decoder.decode(&ev, size, f.ctx(), out);
    if (d == Decoded::Event) sink.write(*out);
    return d;
  }
  Json last() const { return test::json_of(sink.records.back()); }
};

TEST_F(TcpDecoding, ConnectsSucceedOrFailWithAnOutcome) {
  pyebpf_tcp_connect_event ev{};
  ev.kind = PYEBPF_TCP_CONNECT;
  ev.new_state = 1;  // TCP_ESTABLISHED
  ev.hdr = test::header(500, 501, 1'000'068'000);
  ev.addrs = v4("127.0.0.1", 37050, "127.0.0.1", 5432);
  ev.start_ns = 1'000'000'000;
  ev.srtt_us = 35;
  ev.same_thread = 1;
  ASSERT_EQ(decode(ev), Decoded::Event);
  EXPECT_EQ(test::keys_of(sink.records[0]),
            (std::vector<std::string>{
                "metric",        "env",          "ts",          "ts_us",   "pid",    "tid",         "container_pid",
                "container_tid", "comm",         "thread_name", "family",  "src_ip", "src_port",    "dst_ip",
                "dst_port",      "handshake_us", "srtt_us",     "outcome", "error",  "duration_us", "syn_retransmits",
                "netns"}));
  Json ok = last();
  EXPECT_EQ(ok["family"], "AF_INET");
  EXPECT_EQ(ok["dst_ip"], "127.0.0.1");
  EXPECT_EQ(ok["dst_port"], 5432);
  EXPECT_EQ(ok["handshake_us"], 68);
  EXPECT_EQ(ok["outcome"], "success");
  EXPECT_TRUE(ok["error"].is_null());
  EXPECT_EQ(ok["netns"], 4026531833u);

  ev.new_state = 7;  // TCP_CLOSE
  ev.sk_err = ECONNREFUSED;
  ASSERT_EQ(decode(ev), Decoded::Event);
  Json refused = last();
  EXPECT_TRUE(refused["handshake_us"].is_null());  // null, not absent: the column exists for every connect
  EXPECT_EQ(refused["outcome"], "refused");
  EXPECT_EQ(refused["error"], "ECONNREFUSED");
  EXPECT_EQ(refused["duration_us"], 68);
}

TEST_F(TcpDecoding, AcceptsWithAndWithoutHandshakeData) {
  pyebpf_tcp_accept_event ev{};
  ev.kind = PYEBPF_TCP_ACCEPT;
  ev.hdr = test::header(500, 502, 2'002'500'000);
  ev.addrs = v4("10.0.0.1", 8000, "10.0.0.2", 51000);
  ev.flags = PYEBPF_ACCEPT_HAVE_ESTABLISHED | PYEBPF_ACCEPT_HAVE_LISTENER | PYEBPF_ACCEPT_HAVE_RTT;
  ev.established_ns = 2'000'000'000;
  ev.handshake_rtt_us = 40;
  ev.accept_queue_len = 3;
  ev.accept_queue_max = 128;
  ASSERT_EQ(decode(ev), Decoded::Event);
  Json full = last();
  EXPECT_EQ(full["peer_ip"], "10.0.0.2");
  EXPECT_EQ(full["local_port"], 8000);
  EXPECT_EQ(full["accept_dwell_us"], 2500);
  EXPECT_EQ(full["accept_queue_len"], 3);
  EXPECT_EQ(full["handshake_rtt_us"], 40);
  ev.flags = 0;  // established before tracing, listener unknown
  ASSERT_EQ(decode(ev), Decoded::Event);
  Json bare = last();
  for (const char* f : {"syn_queue_len", "accept_queue_len", "accept_queue_max", "accept_dwell_us", "handshake_rtt_us",
                        "synack_retransmits"})
    EXPECT_TRUE(bare[f].is_null()) << f;
}

TEST_F(TcpDecoding, LossEventsCarryTheirDetailAndOwner) {
  pyebpf_tcp_loss_event ev{};
  ev.kind = PYEBPF_TCP_LOSS;
  ev.type = PYEBPF_LOSS_SEND_RST;
  ev.tcp_state = 1;
  ev.flags = PYEBPF_LOSS_FULL_SOCK | PYEBPF_LOSS_HAVE_DETAIL | PYEBPF_LOSS_OWNER_KNOWN;
  ev.ca_state = 4;
  ev.hdr = test::header(500, 503);
  ev.addrs = v4("10.0.0.1", 8000, "10.0.0.2", 51000);
  ev.snd_cwnd = 10;
  ev.detail = 1;
  ASSERT_EQ(decode(ev), Decoded::Event);
  Json rst = last();
  EXPECT_EQ(rst["event"], "send_rst");
  EXPECT_EQ(rst["tcp_state"], "ESTABLISHED");
  EXPECT_EQ(rst["ca_state"], "Loss");
  EXPECT_EQ(rst["snd_cwnd"], 10);
  EXPECT_EQ(rst["rst_reason"], "NO_SOCKET");  // from the kernel's enum names
  EXPECT_FALSE(rst.contains("segments"));
  EXPECT_EQ(rst["owner_known"], true);

  // A reset answered by a request socket: no congestion state, no owner.
  ev.type = PYEBPF_LOSS_RECV_RST;
  ev.flags = 0;
  ev.tcp_state = 0;
  ev.hdr = pyebpf_event_header{};
  ASSERT_EQ(decode(ev), Decoded::Event);
  Json bare = last();
  EXPECT_TRUE(bare["tcp_state"].is_null());
  EXPECT_TRUE(bare["srtt_us"].is_null());
  EXPECT_EQ(bare["owner_known"], false);
  EXPECT_EQ(bare["thread_name"], "");  // tid 0: no thread is known
}

TEST_F(TcpDecoding, AThreadNamedWhenItFirstOwnedASocketKeepsThatName) {
  pyebpf_tcp_thread_event thread{};
  thread.kind = PYEBPF_TCP_THREAD;
  thread.hdr = test::header(500, 504);
  f.targets.python(500);
  f.targets.names[{500, thread.hdr.thread_id, 504}] = "Pool-3";
  EXPECT_EQ(decode(thread), Decoded::Skipped);
  f.targets.names.clear();  // the thread has gone since
  pyebpf_tcp_connect_event ev{};
  ev.kind = PYEBPF_TCP_CONNECT;
  ev.new_state = 1;
  ev.hdr = thread.hdr;
  ASSERT_EQ(decode(ev), Decoded::Event);
  EXPECT_EQ(last()["thread_name"], "Pool-3");
}

TEST_F(TcpDecoding, WrongSizesAndUnknownKindsAreMalformed) {
  pyebpf_tcp_connect_event ev{};
  ev.kind = PYEBPF_TCP_CONNECT;
  EXPECT_EQ(decode(ev, sizeof(ev) - 1), Decoded::Malformed);
  ev.kind = 99;
  EXPECT_EQ(decode(ev), Decoded::Malformed);
  EXPECT_EQ(decode(ev, 2), Decoded::Malformed);
  EXPECT_TRUE(sink.records.empty());
}

TEST(TcpFlags, OneSetForEveryPart) {
  auto o = test::parse_args({"--net-scope", "host", "--loss-filter-ip", "::1", "--loss-rate-limit", "0"});
  ASSERT_TRUE(o);
  const auto& c = test::tracker_options<TcpOptions>(*o, "tcp");
  EXPECT_EQ(c.net_scope, "host");
  EXPECT_EQ(c.loss_filter_ip, "::1");
  EXPECT_EQ(c.loss_rate_limit, 0u);
  EXPECT_FALSE(test::parse_args({"--loss-filter-ip", "not-an-ip"}));
  EXPECT_FALSE(test::parse_args({"--net-scope", "world"}));
}

TEST(TcpStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = tcp_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_tcp_addrs);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, daddr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, sport);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, family);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_addrs, netns);
  EXPECT_SAME_SIZE(t, pyebpf_tcp_owner);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, connect_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, retrans_seen);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, probes_seen);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, zero_window);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, backoff_seen);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_owner, nondata_seen);
  EXPECT_SAME_SIZE(t, pyebpf_tcp_thread_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_thread_event, hdr);

  EXPECT_SAME_SIZE(t, pyebpf_tcp_connect_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, addrs);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, start_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, sk_err);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_connect_event, same_thread);

  EXPECT_SAME_SIZE(t, pyebpf_tcp_accept_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, flags);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, established_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, handshake_rtt_us);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_accept_event, accept_queue_max);

  EXPECT_SAME_SIZE(t, pyebpf_tcp_loss_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, type);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, ca_state);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, hdr);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, addrs);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, srtt_us);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, retrans_out);
  EXPECT_SAME_LAYOUT(t, pyebpf_tcp_loss_event, detail);
}

}  // namespace
}  // namespace pyebpf::trackers
