// SPDX-License-Identifier: Apache-2.0
// Interval totals from per-CPU running totals (bpf/interval_stats.h), shared
// by gc_stats and gil_stats; and gil_stats records.
#include <gtest/gtest.h>

#include "gil.h"
#include "interval_stats_support.hpp"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/common/interval_stats.hpp"
#include "trackers/gil/gil_events.hpp"

namespace pyebpf {
namespace {

using test::cpu_durations;
using trackers::IntervalTotals;

std::uint64_t in_histogram(const trackers::LatencyHistogram& hist) {
  std::uint64_t n = 0;
  for (auto b : hist) n += b;
  return n;
}

TEST(IntervalTotals, AnIntervalIsTheDifferenceOfTwoReadingsWithItsOwnMax) {
  IntervalTotals first;
  first.add(cpu_durations({10, 20, 30}, 4), 4);
  first.add(cpu_durations({40}, 4), 4);
  EXPECT_EQ(first.count, 4u);
  EXPECT_EQ(first.total_ns, 100'000u);
  EXPECT_EQ(first.max_ns, 40'000u);

  // Interval 5: CPU 0 adds 2 ms; CPU 1 nothing, so its slot still holds
  // interval 3's max... of another epoch: it must not count.
  pyebpf_interval_stats cpu0 = cpu_durations({10, 20, 30, 2000}, 5);
  pyebpf_interval_stats cpu1 = cpu_durations({40}, 3);
  cpu1.max_ns[1] = 99'000'000;
  IntervalTotals second;
  second.add(cpu0, 5);
  second.add(cpu1, 5);
  IntervalTotals d = second.since(first);
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.total_ns, 2'000'000u);
  EXPECT_EQ(d.max_ns, 2'000'000u);
  EXPECT_EQ(in_histogram(d.hist), 1u);

  // Merged intervals: counts and totals add up exactly, the max is the longest.
  IntervalTotals run;
  run.merge(first);
  run.merge(d);
  EXPECT_EQ(run.count, 5u);
  EXPECT_EQ(run.total_ns, 2'100'000u);
  EXPECT_EQ(run.max_ns, 2'000'000u);
  EXPECT_EQ(in_histogram(run.hist), 5u);
}

TEST(IntervalTotals, PercentilesStayInTheirBucketAndUnderTheMax) {
  IntervalTotals t;
  pyebpf_interval_stats cpu = cpu_durations({}, 0);
  for (int i = 0; i < 90; ++i) {
    ++cpu.count;
    ++cpu.hist[pyebpf_latency_bucket(5000)];
  }
  for (int i = 0; i < 10; ++i) {
    ++cpu.count;
    ++cpu.hist[pyebpf_latency_bucket(50'000)];
  }
  cpu.max_ns[0] = 51'000'000;
  t.add(cpu, 0);
  const trackers::BucketRange b5 = trackers::latency_bucket_range(pyebpf_latency_bucket(5000));
  EXPECT_GE(t.quantile_ms(0.5), b5.low_us / 1000);
  EXPECT_LE(t.quantile_ms(0.5), b5.high_us / 1000);
  EXPECT_LE(t.quantile_ms(0.9), b5.high_us / 1000);  // rank 90 of 100 is still a 5 ms wait
  EXPECT_GT(t.quantile_ms(0.99), 40.0);
  EXPECT_LE(t.quantile_ms(0.99), 51.0);  // never above the exact max
}

TEST(RecordedLatency, HistogramsSurviveARecordAndIgnoreBadBuckets) {
  trackers::LatencyHistogram hist{};
  hist[pyebpf_latency_bucket(100)] = 3;
  hist[pyebpf_latency_bucket(7000)] = 1;
  auto json = trackers::histogram_json(hist);
  ASSERT_EQ(json.size(), 2u);
  json.push_back({97, 112, 5});    // not a bucket's low bound
  json.push_back({96, 112, -1});   // negative count
  json.push_back("not a bucket");  // not even an entry
  trackers::LatencyHistogram back{};
  trackers::add_histogram_json(json, back);
  EXPECT_EQ(back, hist);
}

TEST(GilStats, RecordHasEveryWaitTheReportedOnesAndThePercentiles) {
  pyebpf_gil_stats cpu{};
  cpu.waits = cpu_durations({300, 300, 300, 300, 300, 300, 300, 300, 1500, 12'000}, 2);
  cpu.reported = 2;
  trackers::GilTotals t;
  t.add(cpu, 2);
  EXPECT_FALSE(t.empty());
  test::DecoderFixture f;
  sinks::Record r{trackers::gil_stats_schema()};
  set_thread_fields(r, f.ctx(), test::header(200, 201, 2'000'000'000));
  trackers::fill_gil_stats(t, 10.0004, r);
  sinks::CaptureSink sink;
  sink.write(r);
  EXPECT_EQ(test::keys_of(sink.records[0]),
            (std::vector<std::string>{"metric", "env", "ts", "ts_us", "pid", "tid", "container_pid", "container_tid",
                                      "comm", "thread_name", "interval_s", "waits", "total_wait_ms", "p50_ms", "p90_ms",
                                      "p99_ms", "max_ms", "reported", "histogram"}));
  auto e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["metric"], "gil_stats");
  EXPECT_EQ(e["interval_s"], 10.0);
  EXPECT_EQ(e["waits"], 10);
  EXPECT_EQ(e["total_wait_ms"], 15.9);
  EXPECT_EQ(e["reported"], 2);
  EXPECT_EQ(e["max_ms"], 12.0);
  EXPECT_NEAR(e["p50_ms"].get<double>(), 0.3, 0.3 * 0.125);
  EXPECT_NEAR(e["p90_ms"].get<double>(), 1.5, 1.5 * 0.125);
  EXPECT_LE(e["p99_ms"].get<double>(), 12.0);
  EXPECT_EQ(e["histogram"].size(), 3u);

  trackers::GilTotals later = t;
  later.reported += 1;
  trackers::GilTotals nothing_new = t.since(t);
  EXPECT_TRUE(nothing_new.empty());
  EXPECT_EQ(later.since(t).reported, 1u);
}

}  // namespace
}  // namespace pyebpf
