// SPDX-License-Identifier: Apache-2.0
// Reading the latency histograms BPF fills (bpf/histogram.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

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

}  // namespace pyebpf::trackers
