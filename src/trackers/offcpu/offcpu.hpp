// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "native/kallsyms.hpp"
#include "offcpu.h"
#include "pyebpf/fd.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/offcpu/offcpu_blocked.hpp"
#include "trackers/offcpu/offcpu_events.hpp"

struct offcpu_bpf;

namespace pyebpf::trackers {

// Off-CPU tracker (metric `off_cpu`): for each sleep of a target thread, how
// long it was off CPU, how long it then waited to run, its state, and its
// kernel, user and Python stacks at switch-out. Per-event mode sends sleeps
// above --offcpu-min-total-ms; aggregated mode (--offcpu-aggregate) emits
// totals per (thread, stacks) every interval, aggregated in BPF maps. Waits
// that have not ended are metric `off_cpu_blocked` (offcpu_blocked.hpp).
struct OffCpuOptions : TrackerOptions {
  double min_total_ms = 20;       // sleeps shorter than this are dropped in BPF
  double py_min_ms = 0;           // Python stack only for sleeps at least this long
  bool py_enable = true;          // walk Python stacks at all
  unsigned max_stack_depth = 20;  // kernel and user frames kept (1..64)
  double aggregate_s = 0;         // > 0: aggregated mode, emit totals every this many seconds
  std::string hook = "auto";      // auto | tp_btf | raw_tp
  std::string capture = "auto";   // auto | resume | switch-out: where stacks are taken
  double blocked_after_s = 5;     // report waits in progress this long (and those at the end); 0: never
};

class OffCpuTracker : public BpfTracker<offcpu_bpf> {
 public:
  explicit OffCpuTracker(const OffCpuOptions& options);
  ~OffCpuTracker() override;

  const char* name() const override { return "offcpu"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  void tick() override;
  void finish() override;
  void remove_target(pid_t pid) override;
  std::vector<std::string> summary() const override;

 private:
  std::string summary_line() const;

  struct Hooks {
    bool tp_btf = true;            // else raw_tp
    bool at_resume = true;         // stacks taken at sched_exit_tp, else at switch-out
    bool runq_from_kernel = true;  // tp_btf: run-queue time from sched_info at switch-in, no wake-up hooks
    std::string family() const { return tp_btf ? "tp_btf" : "raw_tp"; }
  };
  Skeleton open_and_load(const Hooks& hooks) const;
  void attach(const Hooks& hooks);
  void handle(const void* data, std::size_t size) override;
  void decode(const void* data, std::size_t size);
  void flush_aggregates();
  // An aggregated entry's stack (generation `gen`, `hash`) into `out`; false
  // when it has none (hash 0) or the map has not got it (counted).
  bool read_agg_stack(bpf_map* map, __u32 gen, __u64 hash, void* out);
  void start_kallsyms_load();
  bool kallsyms_ready() const;
  const native::Kallsyms& kallsyms();  // waits for the background load (tick()) once
  // Decodes the events held while kernel symbols loaded: once they are
  // loaded, or now (waiting for them) if `wait`.
  void decode_held(bool wait);

  const OffCpuOptions options_;
  std::vector<bpf::Link> links_;
  std::vector<std::string> hooks_;  // attached, for the log
  bool at_resume_ = true;
  bool runq_from_kernel_ = false;  // run-queue time from sched_info, read at switch-in
  Fd agg_timer_;                   // aggregated mode: end of an interval
  std::uint64_t interval_start_ns_ = 0;
  std::optional<native::Kallsyms> kallsyms_;
  std::future<native::Kallsyms> kallsyms_loading_;
  static constexpr std::size_t kMaxHeldBytes = 32 << 20;
  std::deque<std::string> held_;  // events' bytes, oldest first
  std::size_t held_bytes_ = 0;
  OffCpuDecoder decoder_;
  sinks::Record record_;
  std::uint64_t agg_records_ = 0;
  std::uint64_t agg_missing_stacks_ = 0;
  std::optional<BlockedThreads> blocked_;  // unless --offcpu-blocked-after 0
};

}  // namespace pyebpf::trackers
