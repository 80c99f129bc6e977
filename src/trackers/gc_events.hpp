// SPDX-License-Identifier: Apache-2.0
// gc_pause events: their schema, the decoder and the report's GC section.
#pragma once

#include <memory>

#include "sinks/report.hpp"
#include "trackers/event_fields.hpp"

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
};
const GcPauseSchema& gc_pause_schema();

// One struct pyebpf_gc_event into `out` (a gc_pause record); the Python stack
// only with `py_stack` (--gc-py-enable).
Decoded decode_gc_pause(const void* data, std::size_t size, const DecodeContext& ctx, bool py_stack,
                        sinks::Record& out);

std::unique_ptr<sinks::ReportSection> make_gc_report();

}  // namespace pyebpf::trackers
