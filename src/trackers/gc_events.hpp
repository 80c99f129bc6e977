// SPDX-License-Identifier: Apache-2.0
// gc_pause events and gc_stats records: their schemas, the decoder, the
// interval totals and the report's GC section.
#pragma once

#include <cstdint>
#include <memory>

#include "gc.h"
#include "sinks/report.hpp"
#include "trackers/event_fields.hpp"
#include "trackers/interval_stats.hpp"

namespace pyebpf::trackers {

struct GcPauseSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GcPauseSchema() : TableSchema("gc_pause", "ebpf_gc_pause", Prefix::Thread) {}
  const sinks::FieldId start_time = add("start_time", T::Time);
  const sinks::FieldId end_time = add("end_time", T::Time);
  const sinks::FieldId duration_ms = add("duration_ms", T::Float64);
  const sinks::FieldId generation = add("generation", T::UInt8);      // absent when unknown
  const sinks::FieldId collected = add("collected", T::Int64, true);  // absent where the hook cannot see it
  const sinks::FieldId uncollectable = add("uncollectable", T::Int64, true);
  const sinks::FieldId nested = add("nested", T::Bool);         // only when true
  const sinks::FieldId py_stack = add("py_stack", T::PyStack);  // with --gc-py-enable
  const sinks::FieldId py_stack_depth = add("py_stack_depth", T::UInt16);
  const sinks::FieldId py_stack_truncated = add("py_stack_truncated", T::Bool);  // only when true
  const sinks::FieldId py_stack_partial = add("py_stack_partial", T::Bool);      // only when true
  const PyStackFields py{py_stack, py_stack_depth, py_stack_partial};
};
const GcPauseSchema& gc_pause_schema();

// Every collection of one target and generation in an interval, from the
// counts BPF keeps (gc_stats): exact counts and totals, percentiles from the
// histogram. ts is the interval's start; pid/tid/comm those of the target's
// first collecting thread.
struct GcStatsSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GcStatsSchema() : TableSchema("gc_stats", "ebpf_gc_stats", Prefix::Thread) {}
  const sinks::FieldId interval_s = add("interval_s", T::Float64);
  const sinks::FieldId generation = add("generation", T::UInt8);  // absent when unknown
  const sinks::FieldId count = add("count", T::UInt64);           // collections
  const sinks::FieldId total_ms = add("total_ms", T::Float64);
  const sinks::FieldId p50_ms = add("p50_ms", T::Float64);
  const sinks::FieldId p99_ms = add("p99_ms", T::Float64);
  const sinks::FieldId max_ms = add("max_ms", T::Float64);
  const sinks::FieldId collected = add("collected", T::Int64);
  const sinks::FieldId uncollectable = add("uncollectable", T::Int64);
  // The pauses' histogram: [[low_us, high_us, count], ...], non-empty buckets
  // of bpf/histogram.h, so percentiles over many records can be merged.
  const sinks::FieldId histogram = add("histogram", T::Json);
};
const GcStatsSchema& gc_stats_schema();

// The gc_stats totals of one target and generation, summed over CPUs (the
// Totals of IntervalStats).
struct GcTotals {
  std::uint64_t count = 0;  // collections
  std::int64_t collected = 0;
  std::int64_t uncollectable = 0;
  IntervalTotals pauses;  // the timed collections

  void add(const pyebpf_gc_stats& cpu, std::uint32_t epoch);
  GcTotals since(const GcTotals& earlier) const;
  void merge(const GcTotals& other);
  bool empty() const { return count == 0; }
};

// A gc_stats record of one interval's totals; the thread fields must be set.
void fill_gc_stats(const GcTotals& interval, int generation, double interval_s, sinks::Record& out);

// One struct pyebpf_gc_event into `out` (a gc_pause record); the Python stack
// only with `py_stack` (--gc-py-enable).
Decoded decode_gc_pause(const void* data, std::size_t size, const DecodeContext& ctx, bool py_stack,
                        sinks::Record& out);

std::unique_ptr<sinks::ReportSection> make_gc_report();

}  // namespace pyebpf::trackers
