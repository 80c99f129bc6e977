// SPDX-License-Identifier: Apache-2.0
// offcpu's threads blocked now. A sleep is an off_cpu event when it ends; a
// wait that never ends (a deadlock, a recv from a peer that is gone) has no
// end to report. So offcpu also looks, with pyebpf dump's task iterator, at
// the targets' threads that are off their CPU now: each wait that has lasted
// --offcpu-blocked-after seconds is reported once while it goes on, and every
// wait still in progress when the run ends is reported then, with its stacks
// and what it waits on (the lock and its holder, the socket...).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dump/dump_output.hpp"
#include "dump/threads.hpp"
#include "sinks/report.hpp"
#include "trackers/common/tracker.hpp"

namespace pyebpf::trackers {

// Metric off_cpu_blocked (table ebpf_off_cpu_blocked): a thread of a target
// blocked now, with every thread_dump field and why it was reported:
// "threshold" (blocked --offcpu-blocked-after seconds, the run going on) or
// "end" (still blocked when the run ended).
struct OffCpuBlockedSchema : dump::ThreadDumpSchema {
  OffCpuBlockedSchema() : ThreadDumpSchema("off_cpu_blocked", "ebpf_off_cpu_blocked") {}
  const sinks::FieldId reported = add("reported", sinks::ColumnType::Symbol);
};
const OffCpuBlockedSchema& off_cpu_blocked_schema();

// The "Blocked now" part of offcpu's report: the threads still blocked at
// the end of the run, each with what it waits on and its Python leaf.
std::unique_ptr<sinks::ReportSection> make_blocked_report();

class BlockedThreads {
 public:
  // after_s: a wait is reported once it has lasted this long; at the end of
  // the run, every wait at least end_min_ms long is.
  BlockedThreads(double after_s, double end_min_ms);
  ~BlockedThreads();

  // Loads the thread iterator. At start, not at the first look: its load
  // parses the kernel's BTF (~6 MB of transient heap), which on top of the
  // kernel symbols offcpu holds by then raised pyebpf's peak RSS by as much
  // (bench/observer's rss row, 38 -> 44 MiB).
  void start(TrackerContext& ctx);
  // Looks every max(after_s / 2, 0.5 s); kernel frames are named with
  // `kallsyms`, which must outlive this.
  void tick(TrackerContext& ctx, const native::Kallsyms& kallsyms);
  void finish(TrackerContext& ctx, const native::Kallsyms& kallsyms);
  // "3 waits reported while in progress (blocked 5 s or more), 2 threads blocked at the end"
  std::string summary() const;

 private:
  // Makes the dumper once the kernel symbols are there; false without a reader.
  bool ready(const native::Kallsyms& kallsyms);
  // Emits the threads blocked at least `min_ns`; "threshold" ones only once per wait.
  void report(TrackerContext& ctx, std::uint64_t min_ns, const char* why);

  const double after_s_, end_min_ms_;
  std::unique_ptr<dump::ThreadReader> reader_;  // loaded at start, until dumper_ takes it
  std::unique_ptr<dump::Dumper> dumper_;
  std::string unavailable_;  // why the threads cannot be read, once that failed
  std::uint64_t next_check_ns_ = 0;
  // The context-switch count of each thread blocked at the last look: still
  // the same, it is the same wait, already reported.
  std::map<pid_t, std::uint64_t> reported_waits_;
  std::uint64_t during_ = 0, at_end_ = 0;
  EventCounts counts_;
  sinks::Record record_;
};

}  // namespace pyebpf::trackers
