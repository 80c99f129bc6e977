// SPDX-License-Identifier: Apache-2.0
// gil_wait events and gil_stats records: their schemas, the decoder, the
// interval totals, the report's GIL section and the GIL-wait flame graph.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gil.h"
#include "sinks/flame_graph_sink.hpp"
#include "sinks/report.hpp"
#include "trackers/common/event_fields.hpp"
#include "trackers/common/interval_stats.hpp"

namespace pyebpf::live {
class Tally;
}

namespace pyebpf::trackers {

struct GilWaitSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GilWaitSchema() : TableSchema("gil_wait", "ebpf_gil_wait", Prefix::Thread) {}
  const sinks::FieldId duration_ms = add("duration_ms", T::Float64);
  const sinks::FieldId holder_tid = add("holder_tid", T::UInt32);
  const sinks::FieldId holder_container_tid = add("holder_container_tid", T::UInt32);
  const sinks::FieldId holder_thread_name = add("holder_thread_name", T::Symbol);
  const sinks::FieldId waiter_py_stack = add("waiter_py_stack", T::PyStack);
  const sinks::FieldId waiter_py_stack_depth = add("waiter_py_stack_depth", T::UInt16);
  const sinks::FieldId holder_py_stack = add("holder_py_stack", T::PyStack);
  const sinks::FieldId holder_py_stack_depth = add("holder_py_stack_depth", T::UInt16);
  const sinks::FieldId holder_changes = add("holder_changes", T::UInt32);
  const sinks::FieldId waiter_py_stack_partial = add("waiter_py_stack_partial", T::Bool);  // only when true
  const sinks::FieldId holder_py_stack_partial = add("holder_py_stack_partial", T::Bool);  // only when true
  const PyStackFields waiter_py{waiter_py_stack, waiter_py_stack_depth, waiter_py_stack_partial};
  const PyStackFields holder_py{holder_py_stack, holder_py_stack_depth, holder_py_stack_partial};
};
const GilWaitSchema& gil_wait_schema();

// Every contended GIL wait of one target in an interval, from the counts BPF
// keeps (gil_stats): exact counts and totals, percentiles from the
// histogram. ts is the interval's start; pid/tid/comm those of one of the
// target's waiting threads.
struct GilStatsSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GilStatsSchema() : TableSchema("gil_stats", "ebpf_gil_stats", Prefix::Thread) {}
  const sinks::FieldId interval_s = add("interval_s", T::Float64);
  const sinks::FieldId waits = add("waits", T::UInt64);
  const sinks::FieldId total_wait_ms = add("total_wait_ms", T::Float64);
  const sinks::FieldId p50_ms = add("p50_ms", T::Float64);
  const sinks::FieldId p90_ms = add("p90_ms", T::Float64);
  const sinks::FieldId p99_ms = add("p99_ms", T::Float64);
  const sinks::FieldId max_ms = add("max_ms", T::Float64);
  const sinks::FieldId reported = add("reported", T::UInt64);  // waits >= --gil-min-wait-ms: gil_wait events
  // The waits' histogram: [[low_us, high_us, count], ...] (latency_histogram.hpp).
  const sinks::FieldId histogram = add("histogram", T::Json);
};
const GilStatsSchema& gil_stats_schema();

// The gil_stats totals of one target, summed over CPUs (the Totals of IntervalStats).
struct GilTotals {
  std::uint64_t reported = 0;
  IntervalTotals waits;

  void add(const pyebpf_gil_stats& cpu, std::uint32_t epoch);
  GilTotals since(const GilTotals& earlier) const;
  void merge(const GilTotals& other);
  bool empty() const { return waits.count == 0; }
};

// A gil_stats record of one interval's totals; the thread fields must be set.
void fill_gil_stats(const GilTotals& interval, double interval_s, sinks::Record& out);

// struct pyebpf_gil_event -> gil_wait record.
class GilDecoder {
 public:
  // Which host thread has a thread pointer now (BPF's thread_ids map): BPF
  // looks the holder up when the wait begins and ends, and a thread created
  // in between may only be known by the time user space reads the event.
  using ThreadLookup = std::function<std::optional<pyebpf_gil_thread>(std::uint32_t pid, std::uint64_t thread_id)>;
  explicit GilDecoder(ThreadLookup lookup);

  Decoded decode(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& out);
  std::uint64_t holders_resolved_late() const { return resolved_late_; }

 private:
  ThreadLookup lookup_;
  std::unique_ptr<pyebpf_gil_event> scratch_;  // 4 KiB: not on the stack
  std::uint64_t resolved_late_ = 0;
};

std::unique_ptr<sinks::ReportSection> make_gil_report();
// pyebpf top: a gil_wait is GIL-wait time of its waiter, "held by" its holder.
void gil_top(const sinks::Record& r, live::Tally& tally);
// GIL wait: weight = duration_ms; frames = the waiter's Python stack, then
// "GIL held by <holder thread>".
std::vector<sinks::FlameGraphKind> gil_flame_graphs();

}  // namespace pyebpf::trackers
