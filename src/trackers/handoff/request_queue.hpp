// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "handoff.h"
#include "trackers/common/latency_histogram.hpp"

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
  LatencyHistogram hist{};

  void add(const pyebpf_handoff_stats& cpu);
  // this - earlier, counter by counter (earlier must be an older reading).
  HandoffTotals since(const HandoffTotals& earlier) const;
};

}  // namespace pyebpf::trackers
