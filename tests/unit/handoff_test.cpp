// SPDX-License-Identifier: Apache-2.0
// handoff: the BPF latency histogram's buckets and the percentiles read from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "btf_layout.hpp"
#include "handoff.h"
#include "handoff.skel.h"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/handoff/handoff.hpp"
#include "trackers/handoff/handoff_events.hpp"
#include "trackers/handoff/request_queue.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

using Hist = std::array<std::uint64_t, PYEBPF_LATENCY_BUCKETS>;

TEST(HandoffHistogram, BucketRangesContainTheirValues) {
  std::uint32_t previous = 0;
  for (std::uint64_t us : {0ULL, 1ULL, 3ULL, 4ULL, 5ULL, 7ULL, 8ULL, 9ULL, 10ULL, 15ULL, 16ULL, 100ULL, 1000ULL,
                           12345ULL, 999999ULL, (1ULL << 31) + 5, (1ULL << 32) - 1}) {
    std::uint32_t b = pyebpf_latency_bucket(us);
    ASSERT_LT(b, static_cast<std::uint32_t>(PYEBPF_LATENCY_BUCKETS));
    BucketRange r = latency_bucket_range(b);
    EXPECT_LE(r.low_us, static_cast<double>(us)) << us;
    EXPECT_LT(static_cast<double>(us), r.high_us) << us;
    EXPECT_GE(b, previous) << "monotonic";
    previous = b;
    if (us >= 4) {
      EXPECT_LE((r.high_us - r.low_us) / r.low_us, 0.25 + 1e-12) << "at most 25% wide";
    }
  }
  EXPECT_EQ(pyebpf_latency_bucket(1ULL << 40), PYEBPF_LATENCY_BUCKETS - 1u) << "overflow bucket";
}

TEST(HandoffHistogram, EveryValueFallsInExactlyOneContiguousBucket) {
  // Buckets tile the line: each one starts where the previous one ended.
  for (std::uint32_t b = 1; b < PYEBPF_LATENCY_BUCKETS; ++b)
    EXPECT_DOUBLE_EQ(latency_bucket_range(b).low_us, latency_bucket_range(b - 1).high_us) << b;
  for (std::uint64_t us = 0; us < 5000; ++us) {
    BucketRange r = latency_bucket_range(pyebpf_latency_bucket(us));
    ASSERT_TRUE(r.low_us <= us && us < r.high_us) << us;
  }
}

TEST(HandoffHistogram, QuantilesOfAKnownDistribution) {
  Hist h{};
  EXPECT_EQ(histogram_quantile_us(h, 0.5), 0.0) << "empty";
  // 1000 values spread over 1..100 ms: p50 ~ 50 ms, p99 ~ 99 ms.
  std::vector<std::uint64_t> values;
  for (int i = 1; i <= 1000; ++i) values.push_back(static_cast<std::uint64_t>(i) * 100);
  for (auto v : values) ++h[pyebpf_latency_bucket(v)];
  auto exact = [&](double q) { return static_cast<double>(values[static_cast<std::size_t>(std::ceil(q * 1000)) - 1]); };
  for (double q : {0.5, 0.9, 0.99}) {
    double est = histogram_quantile_us(h, q);
    EXPECT_NEAR(est, exact(q), exact(q) * 0.125) << "q=" << q;
  }
  EXPECT_LE(histogram_quantile_us(h, 0.5), histogram_quantile_us(h, 0.99));
}

TEST(HandoffHistogram, QuantileOfASingleValueStaysInItsBucket) {
  Hist h{};
  h[pyebpf_latency_bucket(300000)] = 7;  // 300 ms, 7 times
  BucketRange r = latency_bucket_range(pyebpf_latency_bucket(300000));
  for (double q : {0.01, 0.5, 0.99, 1.0}) {
    double est = histogram_quantile_us(h, q);
    EXPECT_GE(est, r.low_us);
    EXPECT_LE(est, r.high_us);
  }
}

TEST(HandoffTotals, SumsCpusAndTakesIntervalDifferences) {
  pyebpf_handoff_stats a{}, b{};
  a.queued = 5;
  a.picked = 4;
  a.sum_ns = 4000;
  a.hist[3] = 4;
  b.queued = 2;
  b.picked = 1;
  b.peer_closed = 1;
  b.sum_ns = 1000;
  b.hist[3] = 1;
  HandoffTotals first;
  first.add(a);
  HandoffTotals second = first;
  second.add(b);
  HandoffTotals d = second.since(first);
  EXPECT_EQ(d.queued, 2u);
  EXPECT_EQ(d.picked, 1u);
  EXPECT_EQ(d.peer_closed, 1u);
  EXPECT_EQ(d.sum_ns, 1000u);
  EXPECT_EQ(d.hist[3], 1u);
  // A recreated map entry (smaller counters) counts from zero, never wraps.
  HandoffTotals reset;
  reset.add(b);
  EXPECT_EQ(reset.since(second).queued, 2u);
}

TEST(HandoffTotals, RoundMsKeepsMicroseconds) {
  EXPECT_DOUBLE_EQ(round_ms(144.9994), 144.999);
  EXPECT_DOUBLE_EQ(round_ms(0.0006), 0.001);
}

// --- decoding ----------------------------------------------------------------

TEST(HandoffDecoding, APickupNamesBothThreads) {
  test::DecoderFixture f;
  pyebpf_handoff_event ev{};
  ev.hdr = test::header(400, 402, 3'000'000'000);  // the worker; ts = when the fd was queued
  ev.pickup_ns = 3'000'000'000 + 2'500'400;
  ev.main.ts_ns = 3'000'000'000;
  ev.main.thread_id = 0x99;
  ev.main.tid = 400;
  ev.main.ns_tid = 1;
  ev.main.path = PYEBPF_HANDOFF_PATH_EPOLL_DEL;
  std::snprintf(ev.main.comm, sizeof(ev.main.comm), "gunicorn");
  ev.fd = -1;
  ev.pickup_via = PYEBPF_HANDOFF_VIA_RECVFROM;
  f.targets.names[{400, ev.hdr.thread_id, 402}] = "ThreadPoolExecutor-0_0";
  f.targets.names[{400, 0x99, 1}] = "MainThread";
  sinks::CaptureSink sink;
  sinks::Record record(handoff_schema());
  ASSERT_EQ(decode_handoff(&ev, sizeof(ev), f.ctx(), record), Decoded::Event);
  sink.write(record);
  const std::int64_t queued = f.clock.epoch_us(3'000'000'000), picked = f.clock.epoch_us(ev.pickup_ns);
  nlohmann::ordered_json expected = {{"metric", "handoff"},
                                     {"env", "test"},
                                     {"ts", iso8601_utc(queued)},
                                     {"ts_us", queued},
                                     {"pid", 400},
                                     {"tid", 402},
                                     {"container_pid", 400},
                                     {"container_tid", 402},
                                     {"comm", "python3"},
                                     {"thread_name", "ThreadPoolExecutor-0_0"},
                                     {"duration_ms", 2.5},
                                     {"worker_tid", 402},
                                     {"worker_comm", "python3"},
                                     {"worker_thread_name", "ThreadPoolExecutor-0_0"},
                                     {"main_tid", 400},
                                     {"main_comm", "gunicorn"},
                                     {"main_thread_name", "MainThread"},
                                     {"worker_container_tid", 402},
                                     {"main_container_tid", 1},
                                     {"fd", -1},
                                     {"queue_path", "epoll_del"},
                                     {"pickup_via", "recvfrom"},
                                     {"queued_time", iso8601_utc(queued)},
                                     {"pickup_time", iso8601_utc(picked)},
                                     {"handoff_ms", 2.5}};
  EXPECT_EQ(sinks::to_json_line(sink.records[0]), expected.dump());
  EXPECT_EQ(decode_handoff(&ev, sizeof(ev) - 1, f.ctx(), record), Decoded::Malformed);
}

TEST(HandoffFlags, DefaultsAndValues) {
  auto o = test::parse_args({"--handoff-min-ms", "3", "--rq-interval", "5", "--disable-request-queue"});
  ASSERT_TRUE(o);
  const auto& h = test::tracker_options<HandoffOptions>(*o, "handoff");
  EXPECT_EQ(h.min_ms, 3.0);
  EXPECT_EQ(h.rq_interval_s, 5.0);
  EXPECT_TRUE(h.disable_request_queue);
  const auto defaults = test::parse_args({});  // kept: d refers into it
  ASSERT_TRUE(defaults);
  const auto& d = test::tracker_options<HandoffOptions>(*defaults, "handoff");
  EXPECT_EQ(d.rq_interval_s, 10.0);
  EXPECT_FALSE(d.disable_request_queue);
  EXPECT_FALSE(test::parse_args({"--rq-interval", "0.5"}));
}

TEST(HandoffStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = handoff_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_handoff_queued);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, thread_id);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, ns_tid);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, path);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_queued, comm);
  EXPECT_SAME_SIZE(t, pyebpf_handoff_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, pickup_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, main);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, fd);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_event, pickup_via);
  EXPECT_SAME_SIZE(t, pyebpf_handoff_stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, peer_closed);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, sum_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_handoff_stats, hist);
}

}  // namespace
}  // namespace pyebpf::trackers
