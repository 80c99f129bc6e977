// SPDX-License-Identifier: Apache-2.0
// The gc tracker's hook-free sources: the interpreter's own per-generation
// counters, read from the target's memory (what gc.get_stats() returns), and
// the CPU-clock samples that find a target collecting (gc_samples in BPF).
#pragma once

#include <bpf/libbpf.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "gc.h"
#include "python/memory.hpp"

namespace pyebpf::trackers {

// One reading of a target's GC counters: per generation, the running totals
// (collections, collected, uncollectable) and, where the interpreter times
// its collections itself (3.15+: gc_generation_stats.duration), their total
// duration in seconds.
struct GcReading {
  std::array<pyebpf_gc_gen_stats, PYEBPF_GC_GENERATIONS> gen{};
  std::array<double, PYEBPF_GC_GENERATIONS> duration_s{};
  bool timed = false;  // duration_s holds the interpreter's own totals

  std::int64_t collections() const;
};

// Where a target's counters are (gc.h's layout) and, 3.15+, the offset of
// the duration in a generation's entry.
struct GcCounterLayout {
  pyebpf_gc_proc cfg{};
  std::optional<std::uint16_t> duration;
};

// Reads every generation's counters as gc.bpf.c does (one span, or each
// ring's newest entry); nullopt if any read fails (the process is gone), and
// then the generation whose read failed in *failed_generation.
std::optional<GcReading> read_gc_counters(const python::ProcessMemory& memory, const GcCounterLayout& layout,
                                          int* failed_generation = nullptr);

// One generation's difference of two readings of the same target.
struct GcGenerationDelta {
  std::int64_t collections = 0, collected = 0, uncollectable = 0;
  std::optional<double> duration_ms;  // the interpreter's own timing, where it has one
};
GcGenerationDelta gc_delta(const GcReading& later, const GcReading& earlier, int generation);

// The per-CPU gc_samples map (gc.h): one entry per target, made here, read
// per interval as the difference from the last reading.
class GcSamples {
 public:
  explicit GcSamples(bpf_map* map);

  struct Interval {
    std::uint64_t samples = 0, collecting = 0;
    pyebpf_event_header hdr{};  // of some sample of the target (pid 0: none yet)
  };

  void add(pid_t pid);     // throws pyebpf::Error
  void remove(pid_t pid);  // after its last interval
  // The samples since the last call for `pid`; nullopt if it has no entry.
  std::optional<Interval> next_interval(pid_t pid);

 private:
  bpf_map* map_;
  std::size_t cpus_;
  std::map<pid_t, Interval> last_;
};

}  // namespace pyebpf::trackers
