// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "app/options.hpp"
#include "app/targets.hpp"
#include "bpf/shared_maps.hpp"
#include "sinks/sink.hpp"
#include "trackers/degradations.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {

// What a tracker gets from the runner. Everything here outlives the tracker.
struct TrackerContext {
  const app::Options& options;
  app::Targets& targets;
  const bpf::SharedMaps& shared_maps;
  sinks::Sink& sink;
  const WallClock& clock;
  Degradations& degraded;
};

// One tracker = one BPF object + this class. Lifecycle: start() opens the
// skeleton, sets rodata, reuses shared maps, loads and attaches; a target it
// cannot trace goes to ctx.degraded, and it throws pyebpf::Error (with the
// hook and errno) only when it can trace no target at all, which the runner
// records the same way. Then the runner calls consume() whenever one of
// wait_fds() is readable, and once more at the end.
class Tracker {
 public:
  virtual ~Tracker() = default;

  virtual const char* name() const = 0;
  virtual void start(TrackerContext& ctx) = 0;
  virtual std::vector<int> wait_fds() const = 0;
  // Handles every event available now; never blocks.
  virtual void consume() = 0;
  // Called about once a second by the runner, for periodic work.
  virtual void tick() {}
  // Called once when the run ends, after the last consume(): emit what is
  // still held (e.g. a partial aggregation interval).
  virtual void finish() {}
  // One line for the end-of-run summary: what was seen and what was lost.
  virtual std::string summary() const = 0;
};

}  // namespace pyebpf::trackers
