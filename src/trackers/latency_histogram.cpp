// SPDX-License-Identifier: Apache-2.0
#include "trackers/latency_histogram.hpp"

#include <cmath>

namespace pyebpf::trackers {

BucketRange latency_bucket_range(std::uint32_t bucket) {
  if (bucket < 4) return {static_cast<double>(bucket), static_cast<double>(bucket + 1)};
  std::uint32_t e = bucket / 4 + 1;  // inverse of 4 * (e - 1) + sub
  std::uint32_t sub = bucket % 4;
  double unit = std::ldexp(1.0, static_cast<int>(e) - 2);
  double low = (4 + sub) * unit;
  double high = bucket == PYEBPF_LATENCY_BUCKETS - 1 ? low + unit : (5 + sub) * unit;
  return {low, high};
}

double histogram_quantile_us(const LatencyHistogram& hist, double q) {
  std::uint64_t total = 0;
  for (auto n : hist) total += n;
  if (total == 0) return 0;
  // Rank of the quantile among `total` sorted values, 1-based (nearest rank).
  double rank = std::ceil(q * static_cast<double>(total));
  if (rank < 1) rank = 1;
  double seen = 0;
  for (std::uint32_t b = 0; b < hist.size(); ++b) {
    if (hist[b] == 0) continue;
    double n = static_cast<double>(hist[b]);
    if (seen + n >= rank) {
      BucketRange r = latency_bucket_range(b);
      // The values of a bucket are spread evenly over it: the k-th of n sits at
      // the middle of the k-th slice.
      double k = rank - seen;
      return r.low_us + (r.high_us - r.low_us) * (k - 0.5) / n;
    }
    seen += n;
  }
  return latency_bucket_range(PYEBPF_LATENCY_BUCKETS - 1).high_us;
}

}  // namespace pyebpf::trackers
