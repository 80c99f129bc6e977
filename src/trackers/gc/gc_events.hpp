// SPDX-License-Identifier: Apache-2.0
// gc_pause events and gc_stats records: their schemas, the decoder, the
// interval totals and the report's GC section.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "gc.h"
#include "sinks/report.hpp"
#include "trackers/common/event_fields.hpp"
#include "trackers/common/interval_stats.hpp"

namespace pyebpf::live {
class Tally;
}

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

// Every collection of one target and generation in an interval: exact counts
// (the interpreter's own, or with --gc-pauses on BPF's), and the durations of
// those the probes timed (`timed` of `count`). ts is the interval's start;
// pid/tid/comm those of the target's first collecting thread, or its main
// thread.
struct GcStatsSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GcStatsSchema() : TableSchema("gc_stats", "ebpf_gc_stats", Prefix::Thread) {}
  const sinks::FieldId interval_s = add("interval_s", T::Float64);
  const sinks::FieldId generation = add("generation", T::UInt8);  // absent when unknown
  const sinks::FieldId count = add("count", T::UInt64);           // collections
  const sinks::FieldId timed = add("timed", T::UInt64);           // of them, timed one by one by the probes
  // Their total pause: the interpreter's own timing where it has one (3.15+:
  // every collection), else the timed ones'; absent with neither.
  const sinks::FieldId total_ms = add("total_ms", T::Float64, true);
  const sinks::FieldId p50_ms = add("p50_ms", T::Float64, true);  // of the timed ones; absent if none
  const sinks::FieldId p99_ms = add("p99_ms", T::Float64, true);
  const sinks::FieldId max_ms = add("max_ms", T::Float64, true);
  const sinks::FieldId collected = add("collected", T::Int64);
  const sinks::FieldId uncollectable = add("uncollectable", T::Int64);
  // The timed pauses' histogram: [[low_us, high_us, count], ...], non-empty
  // buckets of bpf/histogram.h, so percentiles over many records can be merged.
  const sinks::FieldId histogram = add("histogram", T::Json);
};
const GcStatsSchema& gc_stats_schema();

// GC's share of one target's CPU in an interval, from CPU-clock samples
// (--gc-sample-hz): of the samples that found one of its threads on a CPU,
// those that found that thread running a collection.
struct GcCpuSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  GcCpuSchema() : TableSchema("gc_cpu", "ebpf_gc_cpu", Prefix::Thread) {}
  const sinks::FieldId interval_s = add("interval_s", T::Float64);
  const sinks::FieldId samples = add("samples", T::UInt64);
  const sinks::FieldId gc_samples = add("gc_samples", T::UInt64);
  const sinks::FieldId gc_percent = add("gc_percent", T::Float64);  // 100 * gc_samples / samples
  const sinks::FieldId gc_cpu_ms = add("gc_cpu_ms", T::Float64);    // gc_samples times the sampling period
};
const GcCpuSchema& gc_cpu_schema();

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

// A gc_stats record of one interval's totals, `timed` of whose collections
// have their pause in interval.pauses; `duration_ms` is the interpreter's own
// total, where it has one. The thread fields must be set.
void fill_gc_stats(const GcTotals& interval, std::uint64_t timed, std::optional<double> duration_ms, int generation,
                   double interval_s, sinks::Record& out);

// A gc_cpu record; the thread fields must be set.
void fill_gc_cpu(std::uint64_t samples, std::uint64_t gc_samples, unsigned sample_hz, double interval_s,
                 sinks::Record& out);

// One struct pyebpf_gc_event into `out` (a gc_pause record); the Python stack
// only with `py_stack` (--gc-py-enable).
Decoded decode_gc_pause(const void* data, std::size_t size, const DecodeContext& ctx, bool py_stack,
                        sinks::Record& out);

std::unique_ptr<sinks::ReportSection> make_gc_report();
// pyebpf top: a gc_pause is GC time of the thread that collected, and a pause.
void gc_top(const sinks::Record& r, live::Tally& tally);

}  // namespace pyebpf::trackers
