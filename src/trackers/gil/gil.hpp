// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "bpf_runtime/handles.hpp"
#include "gil.h"
#include "python/offsets.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/gil/gil_events.hpp"

struct gil_bpf;

namespace pyebpf::python {
class PythonProcess;
}

namespace pyebpf::trackers {

// Where and how GIL waits of one process are measured (see bpf/gil.bpf.c).
struct GilHookPlan {
  pyebpf_gil_hook hook = PYEBPF_GIL_HOOK_TAKE_GIL;
  std::string binary;                      // file the uprobes go in, as pyebpf opens it
  std::string shown_binary;                // the same file as the target sees it
  std::vector<binary::ElfSymbol> entries;  // functions probed (entry + return each)
  std::vector<std::uint64_t> offsets;      // their file offsets
  std::string why;                         // why this hook, for the info log
};

// take_gil and its whole-function compiler clones (take_gil.constprop.0...):
// functions that a call to take_gil may enter and return from. Split-off
// parts (.cold, .part.N) are not entry points and are left out.
std::vector<binary::ElfSymbol> take_gil_functions(const binary::ElfFile& elf);

// The per-process BPF configuration for a GIL at `gil_addr`, checked against
// what the BPF side can read (every field inside PYEBPF_GIL_STATE_BYTES).
// Throws pyebpf::Error naming the missing or misplaced field.
pyebpf_gil_proc make_gil_proc(const python::OffsetsRow& row, std::uint64_t gil_addr, pyebpf_gil_hook hook);

// Address of the main interpreter's GIL in a live process: _PyRuntime +
// runtime.gil (3.8-3.11), or the main interpreter's ceval.gil pointer (3.12+).
// Throws pyebpf::Error if it cannot be read or does not look like a GIL.
std::uint64_t find_gil(const python::PythonProcess& python);

// "auto" | "sched" | "cond_wait" | "take_gil" -> the hook to use for one
// process. auto takes sched when the kernel has the scheduler hooks it needs
// (`sched_hooks`) and the process's C library is glibc, else cond_wait when a
// mapped C library defines pthread_cond_timedwait, else take_gil when the
// interpreter has the symbol. Throws pyebpf::Error when the requested hook
// (or, for auto, none) is possible.
GilHookPlan plan_gil_hook(pid_t pid, const python::PythonProcess& python, const std::string& requested,
                          bool sched_hooks);

// Waits at or above this many ms get a gil_wait event (with both stack
// walks); every wait is counted in BPF whatever it is (docs/trackers/gil.md
// says why this value).
inline constexpr double kGilDefaultMinWaitMs = 5.0;

// gil_wait events per target and second at most; the rest are counted in
// gil_stats (docs/trackers/gil.md: a convoy's cost without it).
inline constexpr unsigned kGilDefaultMaxEvents = 1000;

struct GilOptions : TrackerOptions {
  double min_wait_ms = kGilDefaultMinWaitMs;   // shorter waits are only counted, in BPF (0: an event for every one)
  double stats_interval_s = 10.0;              // gil_stats records every this many seconds, and at the end
  bool py_enable = true;                       // walk waiter and holder Python stacks
  double py_min_ms = 0.0;                      // ... only for waits at least this long
  std::string hook = "auto";                   // auto | sched | cond_wait | take_gil
  unsigned max_events = kGilDefaultMaxEvents;  // gil_wait events per target and second (0: no limit)
};

// GIL waits: who waited for the GIL, how long, who held it, and both Python
// stacks. Every wait is counted in BPF and emitted as `gil_stats` records per
// target and interval; one `gil_wait` event per wait of at least
// --gil-min-wait-ms.
class GilTracker : public BpfTracker<gil_bpf> {
 public:
  explicit GilTracker(const GilOptions& options);
  ~GilTracker() override;

  const char* name() const override { return "gil"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  void add_target(const Target& target) override;
  void remove_target(pid_t pid) override;
  void finish() override;
  std::vector<std::string> summary() const override { return {summary_line()}; }

 private:
  std::string summary_line() const;
  void emit_stats(const pyebpf_event_header& hdr, const GilTotals& interval, double interval_s);
  // gil_procs entry and uprobes of one target.
  void register_target(const Target& target);
  void attach_process(pid_t pid, const GilHookPlan& plan);
  // The scheduler hooks every sched-hook target shares, attached with the first.
  void attach_sched_hooks();
  void scan_threads();
  void handle(const void* data, std::size_t size) override;

  const GilOptions options_;
  std::vector<bpf::Link> links_;
  bool sched_hooks_ = false;                               // the kernel can run the sched hook's programs (loaded)
  bool sched_attached_ = false;                            // and they are attached
  std::map<pid_t, std::vector<bpf::Link>> process_links_;  // per target: its uprobes
  GilDecoder decoder_;
  sinks::Record record_;
  sinks::Record stats_record_;
  std::optional<IntervalStats<pyebpf_gil_stats_key, pyebpf_gil_stats, GilTotals>> stats_;
};

}  // namespace pyebpf::trackers
