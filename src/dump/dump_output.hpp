// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "dump/threads.hpp"
#include "sinks/record.hpp"
#include "sinks/schema.hpp"
#include "util/clock.hpp"

namespace pyebpf::dump {

// Metric thread_dump (table ebpf_thread_dump): one thread at the moment of a
// dump, after the fields every thread-level event starts with. offcpu's
// off_cpu_blocked has the same fields and more.
struct ThreadDumpSchema : sinks::TableSchema {
  explicit ThreadDumpSchema(std::string metric = "thread_dump", std::string table = "ebpf_thread_dump")
      : TableSchema(std::move(metric), std::move(table), Prefix::Thread) {}
  const sinks::FieldId state = add("state", sinks::ColumnType::Symbol);
  const sinks::FieldId state_ms = add("state_ms", sinks::ColumnType::Float64, true);
  const sinks::FieldId syscall = add("syscall", sinks::ColumnType::Symbol, true);
  const sinks::FieldId wait_kind = add("wait_kind", sinks::ColumnType::Symbol, true);
  const sinks::FieldId wait = add("wait", sinks::ColumnType::String, true);
  const sinks::FieldId wait_object = add("wait_object", sinks::ColumnType::Json, true);
  const sinks::FieldId waits_for_tid = add("waits_for_tid", sinks::ColumnType::UInt32, true);
  const sinks::FieldId deadlock = add("deadlock", sinks::ColumnType::Json, true);
  const sinks::FieldId gil = add("gil", sinks::ColumnType::Symbol, true);
  const sinks::FieldId in_gc = add("in_gc", sinks::ColumnType::Bool);
  const sinks::FieldId cpu = add("cpu", sinks::ColumnType::UInt32);
  const sinks::FieldId voluntary_switches = add("voluntary_switches", sinks::ColumnType::UInt64);
  const sinks::FieldId involuntary_switches = add("involuntary_switches", sinks::ColumnType::UInt64);
  const sinks::FieldId kernel_stack = add("kernel_stack", sinks::ColumnType::NativeStack);
  const sinks::FieldId native_stack = add("native_stack", sinks::ColumnType::NativeStack);
  const sinks::FieldId py_stack = add("py_stack", sinks::ColumnType::PyStack);
  const sinks::FieldId py_stack_depth = add("py_stack_depth", sinks::ColumnType::UInt16);
  const sinks::FieldId py_stack_problem = add("py_stack_problem", sinks::ColumnType::String, true);
};

const ThreadDumpSchema& thread_dump_schema();

// `r` (of thread_dump_schema() or a schema derived from it) filled from
// thread `t` of `p`.
void fill_record(sinks::Record& r, const DumpedProcess& p, const DumpedThread& t, const std::string& env,
                 const WallClock& clock);

// The dump for people: per process a table of its threads (one line each:
// state, for how long, GIL, what it waits on), the deadlocks and the threads
// waiting on one same lock, then each thread's stacks.
std::string dump_text(const std::vector<DumpedProcess>& processes, const WallClock& clock);

}  // namespace pyebpf::dump
