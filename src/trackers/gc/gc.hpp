// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "bpf_runtime/handles.hpp"
#include "bpf_runtime/perf_sampler.hpp"
#include "gc.h"
#include "pyebpf/fd.hpp"
#include "python/memory.hpp"
#include "python/offsets.hpp"
#include "python/version.hpp"
#include "sinks/record.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/gc/gc_counters.hpp"
#include "trackers/gc/gc_events.hpp"

struct gc_bpf;

namespace pyebpf::python {
class PythonProcess;
}

namespace pyebpf::trackers {

// --gc-hook: which hook pair to use (auto = USDT where present, else uprobe).
enum class GcHookChoice { Auto, Usdt, Uprobe };
std::optional<GcHookChoice> parse_gc_hook(const std::string& text);

// The hook pair chosen for one interpreter binary.
struct GcHookPlan {
  enum class Kind { None, Usdt, Uprobe } kind = Kind::None;
  // Uprobe: the collector and its compiler clones (entry points only).
  std::vector<binary::ElfSymbol> functions;
  // Uprobe: per function, whether its first argument is the PyThreadState*
  // (the unmodified function on 3.9+; clones may have dropped parameters).
  std::vector<bool> arg0_is_tstate;
  // Usdt: the two probes.
  std::optional<binary::UsdtProbe> start, done;
  // One line for the log: what is attached and what the duration covers.
  std::string description;
  // Kind::None: why nothing can be attached, and what would fix it.
  std::string missing, hint;
};

// Name of the collector function: "gc_collect_main" from 3.10 on, "collect"
// before (the function CPython 3.10 renamed).
std::string gc_collector_name(const python::PyVersion& version);

// Picks the hooks for one interpreter ELF of `version`. Pure: reads only the
// ELF's symbols and notes.
GcHookPlan plan_gc_hooks(const binary::ElfFile& elf, const python::PyVersion& version, GcHookChoice choice);

// Where each generation's totals are, from an offsets row (gc.h): an array of
// struct gc_generation_stats (<= 3.14) or the rings of struct gc_stats (3.15+).
// Throws pyebpf::Error if the row lacks a field or it does not fit BPF.
pyebpf_gc_proc gc_totals_layout(const python::OffsetsRow& row);

// The GC state fields are not in _Py_DebugOffsets (3.15 publishes only where
// the totals are), so before BPF trusts them the row's values are checked
// against what must hold in the target's GC state at cfg.gcstate: the size of
// struct _gc_runtime_state the target publishes, generation0 ==
// &generations[0], every generation head a list head, readable and sane
// totals. Throws pyebpf::Error naming the field that fails.
void check_gc_state(const python::OffsetsRow& row, const python::ProcessMemory& memory, const pyebpf_gc_proc& cfg);

// Where the target's GC state and per-generation totals are, checked as above,
// and (for the sampler) its `collecting` flag and GIL.
pyebpf_gc_proc gc_proc_config(const python::PythonProcess& python);

// The same, with where 3.15+ keep each generation's total duration.
GcCounterLayout gc_counter_layout(const python::PythonProcess& python);

// Collections at or above this many ms get a gc_pause event (with the stack
// walk); every collection is counted in BPF whatever it is. 1 ms bounds the
// cost of the events to a stack walk per ms of GC, a few % at worst
// (docs/trackers/gc.md).
inline constexpr double kGcDefaultMinMs = 1.0;

// --gc-pauses: when collections are timed one by one by a probe pair (two
// traps per collection in the target). on: always (every count from BPF);
// off: never; auto: while the target collects at most --gc-pauses-max-rate
// times a second.
enum class GcPauses { Auto, On, Off };
std::optional<GcPauses> parse_gc_pauses(const std::string& text);

// Two traps cost a collection ~3-40 µs of the target's CPU (bench/gc,
// bench/observer): at 200 collections a second that is <= 0.8 % of a core.
inline constexpr double kGcDefaultPausesMaxRate = 200;

struct GcOptions : TrackerOptions {
  double min_ms = kGcDefaultMinMs;  // shorter collections are only counted, in BPF (0: an event for every one)
  double stats_interval_s = 10.0;   // gc_stats records every this many seconds, and at the end
  bool py_enable = true;            // Python stack of the code that triggered the collection
  std::string hook = "auto";        // auto | usdt | uprobe
  std::string pauses = "auto";      // auto | on | off
  double pauses_max_rate = kGcDefaultPausesMaxRate;  // auto: probes only at or below this many collections/s
  unsigned sample_hz = 99;                           // GC's share of CPU from samples (0: off)
};

// Garbage collections of each target: counted per generation from the
// interpreter's own counters and emitted as `gc_stats` records per interval,
// with GC's share of the target's CPU from samples (`gc_cpu`), none of which
// puts a hook in the target. While the pause probes are attached (--gc-pauses),
// each collection is also timed in BPF, and one `gc_pause` event, with the
// stack, goes out per collection at or above --gc-min-ms.
class GcTracker : public BpfTracker<gc_bpf> {
 public:
  explicit GcTracker(const GcOptions& options);
  ~GcTracker() override;

  const char* name() const override { return "gc"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  void add_target(const Target& target) override;
  void remove_target(pid_t pid) override;
  void finish() override;
  std::vector<std::string> summary() const override { return summary_lines(); }

 private:
  // One target: where its counters are, the last readings, its probes.
  struct Traced {
    const python::PythonProcess* python = nullptr;
    GcCounterLayout layout;
    GcHookPlan plan;               // Kind::None: its collections cannot be timed one by one
    GcReading checked;             // at the last rate check: the last known totals once it is gone
    std::uint64_t checked_ns = 0;  // CLOCK_MONOTONIC of `checked`
    GcReading interval_start;      // at the start of the gc_stats interval
    GcReading interval_end;        // read at the flush, before BPF's timed pauses
    // Collections timed in an earlier interval than the counters counted
    // them in, per generation: taken off the next interval's count.
    std::array<std::uint64_t, PYEBPF_GC_GENERATIONS> counted_ahead{};
    pyebpf_event_header hdr{};  // who it is, for records no BPF header names (its samples' once it has some)
    bool probes = false;        // pause probes attached now
    int calm_checks = 0;        // checks in a row at or below half the max rate, probes off
    unsigned attaches = 0, detaches = 0;
    bool gone = false;
  };
  using StatsKey = std::pair<std::uint32_t, std::uint32_t>;  // (pid, generation) of pyebpf_gc_stats_key

  std::vector<std::string> summary_lines() const;
  void attach(pid_t pid, Traced& t);
  void detach(pid_t pid, Traced& t);
  void check_rates();
  void flush();
  void emit_interval(pid_t pid, Traced& t, double interval_s);
  void emit_stats(const pyebpf_event_header& hdr, int generation, const GcTotals& interval, std::uint64_t timed,
                  std::optional<double> duration_ms, double interval_s);
  void emit_cpu(pid_t pid, const GcSamples::Interval& samples, double interval_s);
  void handle(const void* data, std::size_t size) override;

  const GcOptions options_;
  const GcPauses pauses_;
  const GcHookChoice hook_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;  // per target: its probes
  sinks::Record record_;
  sinks::Record stats_record_;
  sinks::Record cpu_record_;
  std::optional<IntervalStats<pyebpf_gc_stats_key, pyebpf_gc_stats, GcTotals>> stats_;
  std::map<StatsKey, std::pair<pyebpf_event_header, GcTotals>> timed_;  // BPF's pauses of the interval ending
  std::optional<GcSamples> samples_;
  std::optional<bpf::PerfSampler> sampler_;
  Fd check_timer_;
  std::uint64_t interval_start_ns_ = 0;
  std::map<pid_t, Traced> targets_;
  GcTotals run_;  // every interval emitted, of every target
  std::uint64_t run_samples_ = 0, run_collecting_ = 0;
  std::size_t records_ = 0;
  std::size_t traced_ = 0;
};

}  // namespace pyebpf::trackers
