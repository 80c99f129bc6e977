// SPDX-License-Identifier: Apache-2.0
// py_stack events: their schema, the decoder (ring-buffer bytes -> record),
// the report's CPU section and the CPU flame graph.
#pragma once

#include <memory>
#include <vector>

#include "sinks/flame_graph_sink.hpp"
#include "sinks/report.hpp"
#include "trackers/common/event_fields.hpp"

namespace pyebpf::live {
class Tally;
}

namespace pyebpf::trackers {

struct PyStackSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  PyStackSchema() : TableSchema("py_stack", "ebpf_py_stacks", Prefix::Thread) {}
  const sinks::FieldId stack = add("stack", T::PyStack);
  const sinks::FieldId stack_depth = add("stack_depth", T::UInt16);
  const sinks::FieldId leaf_func = add("leaf_func", T::String);
  const sinks::FieldId leaf_file = add("leaf_file", T::String);
  const sinks::FieldId leaf_line = add("leaf_line", T::Int32);
  const sinks::FieldId truncated = add("truncated", T::Bool);
  const sinks::FieldId partial = add("partial", T::Bool);  // only when true: see AddedPyStack::partial
  const PyStackFields py{stack, stack_depth, partial};
};
const PyStackSchema& py_stack_schema();

// One struct pyebpf_py_stack_event into `out` (a py_stack record).
Decoded decode_py_stack(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& out);

std::unique_ptr<sinks::ReportSection> make_py_stack_report();
// CPU: weight = samples; speedscope ms = samples / `frequency` Hz.
std::vector<sinks::FlameGraphKind> py_stack_flame_graphs(unsigned frequency);
// pyebpf top: each sample is 1/`frequency` s of its thread's CPU.
void py_stack_top(unsigned frequency, const sinks::Record& r, live::Tally& tally);

}  // namespace pyebpf::trackers
