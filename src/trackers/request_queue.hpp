// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "handoff.h"

namespace pyebpf::trackers {

// The handoff counters of one process, summed over CPUs (struct
// pyebpf_handoff_stats is per CPU and cumulative; intervals are differences).
struct HandoffTotals {
  std::uint64_t queued = 0;
  std::uint64_t picked = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t same_thread = 0;
  std::uint64_t peer_closed = 0;
  std::uint64_t sum_ns = 0;
  std::array<std::uint64_t, PYEBPF_HANDOFF_BUCKETS> hist{};

  void add(const pyebpf_handoff_stats& cpu);
  // this - earlier, counter by counter (earlier must be an older reading).
  HandoffTotals since(const HandoffTotals& earlier) const;
};

// [low, high) in microseconds of a histogram bucket (see pyebpf_handoff_bucket).
struct BucketRange {
  double low_us;
  double high_us;
};
BucketRange handoff_bucket_range(std::uint32_t bucket);

// The q-quantile (0 < q <= 1) in microseconds estimated from the histogram:
// the bucket holding the rank, interpolated linearly inside it. 0 if empty.
double histogram_quantile_us(const std::array<std::uint64_t, PYEBPF_HANDOFF_BUCKETS>& hist, double q);

}  // namespace pyebpf::trackers
