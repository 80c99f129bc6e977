// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

namespace pyebpf {

// Converts BPF timestamps (bpf_ktime_get_ns: CLOCK_MONOTONIC) to wall time. The
// offset is measured at construction and again on refresh(), so a long run
// follows NTP steps instead of drifting from a value taken once at start.
class WallClock {
 public:
  WallClock();
  void refresh();
  std::int64_t epoch_us(std::uint64_t monotonic_ns) const;

 private:
  std::int64_t offset_ns_ = 0;  // realtime - monotonic
};

// "2026-11-29T15:56:55.123456Z"
std::string iso8601_utc(std::int64_t epoch_us);
void append_iso8601_utc(std::string& out, std::int64_t epoch_us);

// CLOCK_MONOTONIC now, in ns: the same clock as bpf_ktime_get_ns().
std::uint64_t monotonic_ns();

// Milliseconds with microsecond resolution (nearest), as every *_ms field is
// printed: 5'123'500 ns -> 5.124. Rounded in integers, so a duration prints
// the same whichever tracker measured it.
double ns_to_ms(std::uint64_t ns);

// A value computed in floating point (a mean, a quantile, seconds) rounded to
// 3 decimals: ms with microsecond resolution, s with millisecond resolution.
double round_ms(double value);

}  // namespace pyebpf
