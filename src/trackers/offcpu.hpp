// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/ring_buffer.hpp"
#include "native/kallsyms.hpp"
#include "native/symbolizer.hpp"
#include "offcpu.h"
#include "pyebpf/fd.hpp"
#include "trackers/tracker.hpp"

struct offcpu_bpf;

namespace pyebpf::trackers {

// Off-CPU tracker (metric `off_cpu`): for each sleep of a target thread, how
// long it was off CPU, how long it then waited to run, its state, and its
// kernel, user and Python stacks at switch-out. Per-event mode sends sleeps
// above --offcpu-min-total-ms; aggregated mode (--offcpu-aggregate) emits
// totals per (thread, stacks) every interval, aggregated in BPF maps.
class OffCpuTracker : public Tracker {
 public:
  OffCpuTracker();
  ~OffCpuTracker() override;

  const char* name() const override { return "offcpu"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  void finish() override;
  std::string summary() const override;

 private:
  struct SkelDeleter {
    void operator()(offcpu_bpf* skel) const noexcept;
  };
  using Skeleton = std::unique_ptr<offcpu_bpf, SkelDeleter>;

  struct Hooks {
    bool tp_btf = true;     // else raw_tp
    bool at_resume = true;  // stacks taken at sched_exit_tp, else at switch-out
    std::string family() const { return tp_btf ? "tp_btf" : "raw_tp"; }
  };
  Skeleton open_and_load(const Hooks& hooks) const;
  void attach(const Hooks& hooks);
  void handle(const void* data, std::size_t size);
  void flush_aggregates();
  void add_stacks(sinks::Event& e, std::uint32_t pid, const pyebpf_offcpu_native_stack* kstack,
                  const pyebpf_offcpu_native_stack* ustack, const pyebpf_py_stack* py, std::size_t py_bytes);
  std::vector<std::string> user_stack(std::uint32_t pid, const pyebpf_offcpu_native_stack& stack);
  const native::Kallsyms& kallsyms();  // waits for the background load once

  TrackerContext* ctx_ = nullptr;
  Skeleton skel_;
  std::vector<bpf::Link> links_;
  std::string hooks_;
  bool at_resume_ = true;
  std::optional<bpf::RingBuffer> events_;
  Fd agg_timer_;  // aggregated mode: end of an interval
  std::uint64_t interval_start_ns_ = 0;
  native::Kallsyms kallsyms_;
  std::future<native::Kallsyms> kallsyms_loading_;
  native::ElfCache elf_files_;
  std::unordered_map<std::uint32_t, std::unique_ptr<native::NativeSymbolizer>> native_;
  std::unique_ptr<pyebpf_offcpu_event> scratch_;
  std::uint64_t emitted_ = 0;
  std::uint64_t malformed_ = 0;
  std::uint64_t agg_records_ = 0;
  std::uint64_t agg_missing_stacks_ = 0;
};

// "S", "D", "I" (idle kernel wait), "T", "t", "P"..., from a raw task state as
// sched_switch passes it; "R" for a runnable one. Several bits give several
// letters; a state with no known bit gives "?(0x...)".
std::string format_prev_state(std::uint32_t state);

// A native stack as pyebpf prints every stack: root first, leaf last. `name`
// is called with (address, is_return_address) for each frame. Leaf-side
// frames for which `skip_leaf` is true (the tracing machinery: the BPF program
// and the tracepoint that ran it) are dropped first; then at most `max_depth`
// leaf-most frames are kept, and when the root side was cut the first element
// is "[truncated]".
std::vector<std::string> root_first_stack(const pyebpf_offcpu_native_stack& stack, std::size_t max_depth,
                                          const std::function<std::string(std::uint64_t, bool)>& name,
                                          const std::function<bool(const std::string&)>& skip_leaf = {});

// True for kernel frames that belong to running the BPF program, not to the
// traced thread: bpf_*, __bpf_*, __traceiter_*, perf_* and "... [bpf]" symbols.
bool is_tracing_frame(const std::string& name);

}  // namespace pyebpf::trackers
