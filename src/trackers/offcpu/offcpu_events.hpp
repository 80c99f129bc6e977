// SPDX-License-Identifier: Apache-2.0
// off_cpu events: their schema, the decoder (per-event records and the
// stacks of aggregated ones), the report's off-CPU section and the off-CPU
// flame graph.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "native/kallsyms.hpp"
#include "native/symbolizer.hpp"
#include "offcpu.h"
#include "sinks/flame_graph_sink.hpp"
#include "sinks/report.hpp"
#include "trackers/common/event_fields.hpp"

namespace pyebpf::live {
class Tally;
}

namespace pyebpf::trackers {

// Per-event mode fills cpu and not the interval fields; aggregated mode
// (--offcpu-aggregate) the other way round.
struct OffCpuSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  OffCpuSchema() : TableSchema("off_cpu", "ebpf_off_cpu", Prefix::Thread) {}
  const sinks::FieldId interval_s = add("interval_s", T::Float64, true);  // aggregated
  const sinks::FieldId count = add("count", T::UInt64, true);             // aggregated: sleeps in the record
  const sinks::FieldId off_cpu_ms = add("off_cpu_ms", T::Float64);
  const sinks::FieldId runq_ms = add("runq_ms", T::Float64);
  const sinks::FieldId max_off_cpu_ms = add("max_off_cpu_ms", T::Float64, true);  // aggregated
  const sinks::FieldId prev_state = add("prev_state", T::Symbol);
  const sinks::FieldId cpu = add("cpu", T::UInt16);  // per event
  const sinks::FieldId kernel_stack = add("kernel_stack", T::NativeStack);
  const sinks::FieldId user_stack = add("user_stack", T::NativeStack);
  const sinks::FieldId py_stack = add("py_stack", T::PyStack);
  const sinks::FieldId py_stack_depth = add("py_stack_depth", T::UInt16);
  const sinks::FieldId py_stack_partial = add("py_stack_partial", T::Bool);  // only when true
  const PyStackFields py{py_stack, py_stack_depth, py_stack_partial};
};
const OffCpuSchema& off_cpu_schema();

// "S", "D", "I" (idle kernel wait), "T", "t", "P"..., from a raw task state as
// sched_switch passes it; "R" for a runnable one. Several bits give several
// letters; a state with no known bit gives "?(0x...)".
std::string format_prev_state(std::uint32_t state);

// A native stack root first, leaf last, into `out`. `frame` is called with
// (address, is_return_address) for each frame. Leaf-side frames for which
// `skip_leaf` is true (the tracing machinery: the BPF program and the
// tracepoint that ran it) are dropped first; then at most `max_depth`
// leaf-most frames are kept, and when the root side was cut the first frame
// is a Truncated one.
void root_first_stack(const pyebpf_offcpu_native_stack& stack, std::size_t max_depth,
                      const std::function<stack::NativeFrame(std::uint64_t, bool)>& frame,
                      const std::function<bool(const stack::NativeFrame&)>& skip_leaf,
                      std::vector<stack::NativeFrame>& out);

// True for kernel frames that belong to running the BPF program, not to the
// traced thread: bpf_*, __bpf_*, __traceiter_*, perf_* and [bpf] symbols.
bool is_tracing_frame(const stack::NativeFrame& frame);

// An event as the ring buffer carries it (packed, offcpu.h "On the wire")
// into `ev`; the bytes its Python stack has, or nullopt if the event is
// malformed (shorter than its depths say, a depth past the slots).
std::optional<std::size_t> unpack_offcpu_event(const void* data, std::size_t size, pyebpf_offcpu_event& ev);

// Kernel, user and Python stacks into off_cpu records.
class OffCpuDecoder {
 public:
  // The kernel symbols, asked for at the first kernel stack (loading them
  // takes a while, so the tracker starts that in the background).
  using KernelSymbols = std::function<const native::Kallsyms&()>;
  OffCpuDecoder(unsigned max_depth, KernelSymbols kallsyms);
  ~OffCpuDecoder();

  // One struct pyebpf_offcpu_event (per-event mode) into `out`.
  Decoded decode(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& out);
  // The stack fields of one record; null stacks are left empty.
  void add_stacks(sinks::Record& r, const DecodeContext& ctx, std::uint32_t pid,
                  const pyebpf_offcpu_native_stack* kstack, const pyebpf_offcpu_native_stack* ustack,
                  const pyebpf_py_stack* py, std::size_t py_bytes);

 private:
  void add_native(sinks::Record& r, sinks::FieldId f);

  unsigned max_depth_;
  KernelSymbols kallsyms_;
  native::ElfCache elf_files_;
  std::unordered_map<std::uint32_t, std::unique_ptr<native::NativeSymbolizer>> native_;
  std::unique_ptr<pyebpf_offcpu_event> scratch_;  // 2.6 KiB: not on the stack
  std::vector<stack::NativeFrame> frames_;        // reused
};

std::unique_ptr<sinks::ReportSection> make_offcpu_report();
// pyebpf top: off-CPU time of its thread, by what it slept in (the system
// call, and the Python line that made it).
void offcpu_top(const sinks::Record& r, live::Tally& tally);
// off-CPU: weight = off_cpu_ms; frames = the Python stack, then the kernel
// stack (kernel frames: "_[k]" in folded files).
std::vector<sinks::FlameGraphKind> offcpu_flame_graphs();

}  // namespace pyebpf::trackers
