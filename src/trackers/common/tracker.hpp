// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf_runtime/shared_maps.hpp"
#include "pyebpf/fd.hpp"
#include "python/process.hpp"
#include "sinks/sink.hpp"
#include "trackers/common/degradations.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {

// One process being profiled, as the runner attached it.
struct Target {
  pid_t pid = 0;
  Fd pidfd;  // readable when the process exits
  std::string comm;
  std::unique_ptr<python::PythonProcess> python;  // kept after exit: its caches name late events
  std::string version;                            // "3.11.2"
  // How it was found: "-p", "--name", "child of 12", "exec'd python3".
  std::string origin = "-p";
  pid_t parent = 0;   // the target it was forked from, 0 if none
  pid_t service = 0;  // the root of its lineage (the -p or --name process): workers of one service share it
  std::uint64_t attached_ns = 0;
  std::uint64_t first_event_ns = 0, last_event_ns = 0;  // CLOCK_MONOTONIC when delivered
  std::uint64_t events = 0;
  std::map<std::string, std::uint64_t> metric_events;  // events per metric (py_stack, gil_wait, ...)
  bool exited = false;                                 // ended: exited, or exec'd into another program
  std::string end;                                     // "exited", "exec'd sh"
  std::uint64_t ended_ns = 0;
};

// What trackers may ask about the targets: the list (to plan and attach
// hooks) and the per-process caches decoders name things with. The runner's
// app::Targets implements it; decoder tests use their own.
class TargetLookup {
 public:
  virtual ~TargetLookup() = default;
  // Every target as attached; exited ones stay, marked.
  virtual const std::vector<Target>& all() const = 0;
  // Names the frames BPF recorded in `pid`; null once the target is forgotten.
  virtual python::FrameResolver* frames(pid_t pid) = 0;
  // The threading.Thread name of (thread ident, tid in the target's pid
  // namespace), if the target named that thread. `fresh`: re-read the names
  // now rather than trust a cache refreshed a moment ago.
  virtual std::optional<std::string> thread_name(pid_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                                                 bool fresh = false) = 0;
  // One more event of `pid` in `metric` (for the end-of-run summary).
  virtual void count_event(pid_t pid, const std::string& metric) = 0;
};

// What a tracker gets from the runner. Everything here outlives the tracker.
struct TrackerContext {
  const std::string& env;  // copied into every event
  TargetLookup& targets;
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
  // A target found after start (a forked child, a re-exec'd process, a new
  // --name match), already in ctx.targets and in the shared py_procs map:
  // attach what start() attaches per target (uprobes, per-process map
  // entries), through the same code. Throws pyebpf::Error when this tracker
  // cannot trace it; the runner reports that target as degraded and goes on.
  virtual void add_target(const Target& target) { (void)target; }
  // A target that exited or exec'd, after its events were consumed: drop its
  // per-process state (links, map entries) before its pid can be reused.
  virtual void remove_target(pid_t pid) { (void)pid; }
  virtual std::vector<int> wait_fds() const = 0;
  // Handles every event available now; never blocks.
  virtual void consume() = 0;
  // Called about once a second by the runner, for periodic work.
  virtual void tick() {}
  // Called once when the run ends, after the last consume(): emit what is
  // still held (e.g. a partial aggregation interval).
  virtual void finish() {}
  // Its lines of the end-of-run summary (one per part): what was seen and
  // what was lost.
  virtual std::vector<std::string> summary() const = 0;
  // Events lost so far (ring buffers full), for live views.
  virtual std::uint64_t events_lost() const { return 0; }
};

// How a decoder handled one ring-buffer record.
enum class Decoded {
  Event,      // the record holds an event to write
  Malformed,  // shorter than its struct: counted as lost
  Skipped,    // nothing to write (its target was forgotten, a bookkeeping record)
};

// What a tracker did with what its decoder handled, for its summary line.
struct EventCounts {
  std::uint64_t emitted = 0;
  std::uint64_t malformed = 0;
};

// The common end of a tracker's ring-buffer handler: a thread's event is
// counted for its target (host-level events, and threads of no target,
// pid 0, belong to none) and every event is written to the sinks; a
// malformed record is counted.
inline void deliver(Decoded decoded, const sinks::Record& record, TargetLookup& targets, sinks::Sink& sink,
                    EventCounts& counts) {
  if (decoded == Decoded::Malformed) ++counts.malformed;
  if (decoded != Decoded::Event) return;
  namespace f = sinks::thread_fields;
  const bool of_thread = record.schema().prefix() == sinks::TableSchema::Prefix::Thread;
  const std::uint64_t pid = of_thread && record.has(f::pid) ? record.uint_value(f::pid) : 0;
  if (pid) targets.count_event(static_cast<pid_t>(pid), record.metric());
  sink.write(record);
  ++counts.emitted;
}
inline void deliver(Decoded decoded, const sinks::Record& record, TrackerContext& ctx, EventCounts& counts) {
  deliver(decoded, record, ctx.targets, ctx.sink, counts);
}

}  // namespace pyebpf::trackers
