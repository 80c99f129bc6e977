// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>

#include "pyebpf/fd.hpp"

namespace pyebpf {

// Non-blocking CLOCK_MONOTONIC timerfds for the runner's event loop.

inline std::chrono::nanoseconds from_seconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
}

// Fires after `first`, then every `interval` (zero: once). Throws pyebpf::Error.
Fd make_timer(std::chrono::nanoseconds first, std::chrono::nanoseconds interval);

// A duration drawn uniformly from mean*(1-spread) to mean*(1+spread). Timers
// that wake pyebpf use it so the wakeups never keep step with the sampling
// timer (1 s is 99 periods at 99 Hz): a wakeup landing just before a sample
// on some CPU hides the thread that sample should have seen.
std::chrono::nanoseconds jittered(std::chrono::nanoseconds mean, double spread);

// Reads (resets) a timerfd; true if it fired since the last read.
bool expired(const Fd& timer);

// A timerfd firing about every `period`: each wait is a fresh jittered() one.
class JitteredTimer {
 public:
  JitteredTimer(std::chrono::nanoseconds period, double spread);

  int fd() const { return fd_.get(); }
  // Reads (resets) the timerfd; if it fired, arms the next wait. True if it fired.
  bool expired();

 private:
  std::chrono::nanoseconds period_;
  double spread_;
  Fd fd_;
};

}  // namespace pyebpf
