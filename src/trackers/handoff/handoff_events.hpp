// SPDX-License-Identifier: Apache-2.0
// handoff events and request_queue summaries: their schemas, the handoff
// decoder and the report's handoff section.
#pragma once

#include <memory>

#include "sinks/report.hpp"
#include "trackers/common/event_fields.hpp"

namespace pyebpf::live {
class Tally;
}

namespace pyebpf::trackers {

// One connection picked up by a worker thread; the thread fields are the
// worker's, ts the queue time (the start of the wait).
struct HandoffSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  HandoffSchema() : TableSchema("handoff", "ebpf_handoff", Prefix::Thread) {}
  const sinks::FieldId duration_ms = add("duration_ms", T::Float64);
  const sinks::FieldId worker_tid = add("worker_tid", T::UInt32);
  const sinks::FieldId worker_comm = add("worker_comm", T::Symbol);
  const sinks::FieldId worker_thread_name = add("worker_thread_name", T::Symbol);
  const sinks::FieldId main_tid = add("main_tid", T::UInt32);
  const sinks::FieldId main_comm = add("main_comm", T::Symbol);
  const sinks::FieldId main_thread_name = add("main_thread_name", T::Symbol);
  const sinks::FieldId worker_container_tid = add("worker_container_tid", T::UInt32);
  const sinks::FieldId main_container_tid = add("main_container_tid", T::UInt32);
  const sinks::FieldId fd = add("fd", T::Int32);
  const sinks::FieldId queue_path = add("queue_path", T::Symbol);
  const sinks::FieldId pickup_via = add("pickup_via", T::Symbol);
  const sinks::FieldId queued_time = add("queued_time", T::Time);
  const sinks::FieldId pickup_time = add("pickup_time", T::Time);
  const sinks::FieldId handoff_ms = add("handoff_ms", T::Float64);
};
const HandoffSchema& handoff_schema();

// Every --rq-interval seconds, per target process (not a table of the
// original tool, whose equivalents went to Elasticsearch).
struct RequestQueueSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  RequestQueueSchema() : TableSchema("request_queue", "ebpf_request_queue", Prefix::Host) {}
  const sinks::FieldId pid = add("pid", T::UInt32);
  const sinks::FieldId container_pid = add("container_pid", T::UInt32);
  const sinks::FieldId comm = add("comm", T::Symbol);
  const sinks::FieldId interval_s = add("interval_s", T::Float64);
  const sinks::FieldId queued_now = add("queued_now", T::UInt64);
  const sinks::FieldId queued_max = add("queued_max", T::UInt64);
  const sinks::FieldId oldest_queued_ms = add("oldest_queued_ms", T::Float64);
  const sinks::FieldId queued = add("queued", T::UInt64);
  const sinks::FieldId picked_up = add("picked_up", T::UInt64);
  const sinks::FieldId cancelled = add("cancelled", T::UInt64);
  const sinks::FieldId served_inline = add("served_inline", T::UInt64);
  const sinks::FieldId peer_closed = add("peer_closed", T::UInt64);
  const sinks::FieldId handoff_mean_ms = add("handoff_mean_ms", T::Float64);
  const sinks::FieldId handoff_p50_ms = add("handoff_p50_ms", T::Float64);
  const sinks::FieldId handoff_p99_ms = add("handoff_p99_ms", T::Float64);
  const sinks::FieldId threads_used = add("threads_used", T::UInt32);
};
const RequestQueueSchema& request_queue_schema();

// One struct pyebpf_handoff_event into `out` (a handoff record).
Decoded decode_handoff(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& out);

std::unique_ptr<sinks::ReportSection> make_handoff_report();
// pyebpf top: a handoff is a request's time in the queue, as a pause.
void handoff_top(const sinks::Record& r, live::Tally& tally);

}  // namespace pyebpf::trackers
