// SPDX-License-Identifier: Apache-2.0
// Reading the latency histograms BPF fills (bpf/histogram.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "histogram.h"

namespace pyebpf::trackers {

using LatencyHistogram = std::array<std::uint64_t, PYEBPF_LATENCY_BUCKETS>;

// Adds `from` bucket by bucket: one CPU's copy of a BPF map value, or
// another interval's or process's histogram.
// (A map value's __u64 array or another LatencyHistogram.)
template <typename Buckets>
void add_buckets(LatencyHistogram& into, const Buckets& from) {
  static_assert(sizeof(from) / sizeof(from[0]) == PYEBPF_LATENCY_BUCKETS);
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
}

// [low, high) in microseconds of a histogram bucket (see pyebpf_latency_bucket).
struct BucketRange {
  double low_us;
  double high_us;
};
BucketRange latency_bucket_range(std::uint32_t bucket);

// The q-quantile (0 < q <= 1) in microseconds estimated from the histogram:
// the bucket holding the rank, interpolated linearly inside it. 0 if empty.
double histogram_quantile_us(const LatencyHistogram& hist, double q);

// The same in ms, rounded, and never above `max_ms` (the exact longest value).
double latency_quantile_ms(const LatencyHistogram& hist, double q, double max_ms);

// [[low_us, high_us, count], ...] of the non-empty buckets, for a record's
// histogram field: percentiles over many records can then be merged.
nlohmann::ordered_json histogram_json(const LatencyHistogram& hist);
// The inverse of histogram_json, added to `hist`; entries that name no
// bucket are ignored (a stored file is input like any other).
void add_histogram_json(const nlohmann::ordered_json& json, LatencyHistogram& hist);

// Durations summed from stored interval records (gc_stats, gil_stats), for
// the report.
struct RecordedLatency {
  std::uint64_t count = 0;
  double total_ms = 0;
  double max_ms = 0;
  LatencyHistogram hist{};

  void merge(const RecordedLatency& other);
  double quantile_ms(double q) const { return latency_quantile_ms(hist, q, max_ms); }
};

}  // namespace pyebpf::trackers
