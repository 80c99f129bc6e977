// SPDX-License-Identifier: Apache-2.0
#include "trackers/common/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

#include "util/clock.hpp"

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

double latency_quantile_ms(const LatencyHistogram& hist, double q, double max_ms) {
  return std::min(round_ms(histogram_quantile_us(hist, q) / 1000.0), max_ms);
}

nlohmann::ordered_json histogram_json(const LatencyHistogram& hist) {
  auto out = nlohmann::ordered_json::array();
  for (std::uint32_t b = 0; b < hist.size(); ++b) {
    if (!hist[b]) continue;
    BucketRange r = latency_bucket_range(b);
    out.push_back({static_cast<std::uint64_t>(r.low_us), static_cast<std::uint64_t>(r.high_us), hist[b]});
  }
  return out;
}

void add_histogram_json(const nlohmann::ordered_json& json, LatencyHistogram& hist) {
  if (!json.is_array()) return;
  for (const auto& entry : json) {
    if (!entry.is_array() || entry.size() != 3 || !entry[0].is_number() || !entry[2].is_number_integer() ||
        entry[2].get<std::int64_t>() < 0)
      continue;
    const double low = entry[0].get<double>();
    if (!(low >= 0 && low < 1e12)) continue;
    std::uint32_t b = pyebpf_latency_bucket(static_cast<std::uint64_t>(low));
    if (latency_bucket_range(b).low_us == low) hist[b] += entry[2].get<std::uint64_t>();
  }
}

void RecordedLatency::merge(const RecordedLatency& other) {
  count += other.count;
  total_ms += other.total_ms;
  max_ms = std::max(max_ms, other.max_ms);
  add_buckets(hist, other.hist);
}

}  // namespace pyebpf::trackers
