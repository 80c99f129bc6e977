// SPDX-License-Identifier: Apache-2.0
// Per-CPU interval stats values as BPF fills them, for the gc_stats and
// gil_stats unit tests.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "interval_stats.h"

namespace pyebpf::test {

// One CPU's running totals (bpf/interval_stats.h) of `durations_us`, the
// longest in the slot of interval `epoch`, as interval_stats.bpf.h adds them.
inline pyebpf_interval_stats cpu_durations(std::initializer_list<std::uint64_t> durations_us, std::uint32_t epoch) {
  pyebpf_interval_stats s{};
  for (std::uint64_t us : durations_us) {
    ++s.count;
    s.total_ns += us * 1000;
    ++s.hist[pyebpf_latency_bucket(us)];
    if (us * 1000 > s.max_ns[epoch & 1]) s.max_ns[epoch & 1] = us * 1000;
  }
  s.max_epoch[epoch & 1] = epoch;
  return s;
}

}  // namespace pyebpf::test
