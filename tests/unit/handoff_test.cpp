// SPDX-License-Identifier: Apache-2.0
// handoff: the BPF latency histogram's buckets and the percentiles read from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "handoff.h"
#include "trackers/request_queue.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

using Hist = std::array<std::uint64_t, PYEBPF_HANDOFF_BUCKETS>;

TEST(HandoffHistogram, BucketRangesContainTheirValues) {
  std::uint32_t previous = 0;
  for (std::uint64_t us : {0ULL, 1ULL, 3ULL, 4ULL, 5ULL, 7ULL, 8ULL, 9ULL, 10ULL, 15ULL, 16ULL, 100ULL, 1000ULL,
                           12345ULL, 999999ULL, (1ULL << 31) + 5, (1ULL << 32) - 1}) {
    std::uint32_t b = pyebpf_handoff_bucket(us);
    ASSERT_LT(b, static_cast<std::uint32_t>(PYEBPF_HANDOFF_BUCKETS));
    BucketRange r = handoff_bucket_range(b);
    EXPECT_LE(r.low_us, static_cast<double>(us)) << us;
    EXPECT_LT(static_cast<double>(us), r.high_us) << us;
    EXPECT_GE(b, previous) << "monotonic";
    previous = b;
    if (us >= 4) {
      EXPECT_LE((r.high_us - r.low_us) / r.low_us, 0.25 + 1e-12) << "at most 25% wide";
    }
  }
  EXPECT_EQ(pyebpf_handoff_bucket(1ULL << 40), PYEBPF_HANDOFF_BUCKETS - 1u) << "overflow bucket";
}

TEST(HandoffHistogram, EveryValueFallsInExactlyOneContiguousBucket) {
  // Buckets tile the line: each one starts where the previous one ended.
  for (std::uint32_t b = 1; b < PYEBPF_HANDOFF_BUCKETS; ++b)
    EXPECT_DOUBLE_EQ(handoff_bucket_range(b).low_us, handoff_bucket_range(b - 1).high_us) << b;
  for (std::uint64_t us = 0; us < 5000; ++us) {
    BucketRange r = handoff_bucket_range(pyebpf_handoff_bucket(us));
    ASSERT_TRUE(r.low_us <= us && us < r.high_us) << us;
  }
}

TEST(HandoffHistogram, QuantilesOfAKnownDistribution) {
  Hist h{};
  EXPECT_EQ(histogram_quantile_us(h, 0.5), 0.0) << "empty";
  // 1000 values spread over 1..100 ms: p50 ~ 50 ms, p99 ~ 99 ms.
  std::vector<std::uint64_t> values;
  for (int i = 1; i <= 1000; ++i) values.push_back(static_cast<std::uint64_t>(i) * 100);
  for (auto v : values) ++h[pyebpf_handoff_bucket(v)];
  auto exact = [&](double q) { return static_cast<double>(values[static_cast<std::size_t>(std::ceil(q * 1000)) - 1]); };
  for (double q : {0.5, 0.9, 0.99}) {
    double est = histogram_quantile_us(h, q);
    EXPECT_NEAR(est, exact(q), exact(q) * 0.125) << "q=" << q;
  }
  EXPECT_LE(histogram_quantile_us(h, 0.5), histogram_quantile_us(h, 0.99));
}

TEST(HandoffHistogram, QuantileOfASingleValueStaysInItsBucket) {
  Hist h{};
  h[pyebpf_handoff_bucket(300000)] = 7;  // 300 ms, 7 times
  BucketRange r = handoff_bucket_range(pyebpf_handoff_bucket(300000));
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

}  // namespace
}  // namespace pyebpf::trackers
