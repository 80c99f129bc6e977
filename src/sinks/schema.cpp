// SPDX-License-Identifier: Apache-2.0
#include "sinks/schema.hpp"

#include <map>
#include <mutex>

namespace pyebpf::sinks {
namespace {

using T = ColumnType;

// Fields every thread-level event starts with (trackers/event_fields.hpp).
std::vector<Column> thread_columns() {
  return {{"env", T::Symbol},          {"ts", T::Time},           {"ts_us", T::Int64},
          {"pid", T::UInt32},          {"tid", T::UInt32},        {"container_pid", T::UInt32},
          {"container_tid", T::UInt32}, {"comm", T::Symbol},       {"thread_name", T::Symbol}};
}

// Fields of host-level events (network trackers attribute a process where they can).
std::vector<Column> host_columns() { return {{"env", T::Symbol}, {"ts", T::Time}, {"ts_us", T::Int64}}; }

std::vector<Column> concat(std::vector<Column> a, const std::vector<Column>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<TableSchema> build() {
  std::vector<TableSchema> t;
  // Field lists follow the issues that define each tracker (and the original
  // tool's columns); a field not listed here still lands (see ColumnType).
  t.push_back({"py_stack", "ebpf_py_stacks",
               concat(thread_columns(), {{"stack", T::String},
                                         {"stack_depth", T::UInt16},
                                         {"leaf_func", T::String},
                                         {"leaf_file", T::String},
                                         {"leaf_line", T::Int32},
                                         {"truncated", T::Bool},
                                         {"partial", T::Bool}})});
  t.push_back({"gil_wait", "ebpf_gil_wait",
               concat(thread_columns(), {{"duration_ms", T::Float64},
                                         {"holder_tid", T::UInt32},
                                         {"holder_container_tid", T::UInt32},
                                         {"holder_thread_name", T::Symbol},
                                         {"waiter_py_stack", T::String},
                                         {"waiter_py_stack_depth", T::UInt16},
                                         {"holder_py_stack", T::String},
                                         {"holder_py_stack_depth", T::UInt16}})});
  t.push_back({"gc_pause", "ebpf_gc_pause",
               concat(thread_columns(), {{"start_time", T::Time},
                                         {"end_time", T::Time},
                                         {"duration_ms", T::Float64},
                                         {"generation", T::UInt8},
                                         {"collected", T::Int64, true},
                                         {"uncollectable", T::Int64, true},
                                         {"py_stack", T::String},
                                         {"py_stack_depth", T::UInt16}})});
  t.push_back({"off_cpu", "ebpf_off_cpu",
               concat(thread_columns(), {{"cpu", T::UInt16},
                                         {"off_cpu_ms", T::Float64},
                                         {"runq_ms", T::Float64},
                                         {"prev_state", T::Symbol},
                                         {"kernel_stack", T::StringArray},
                                         {"user_stack", T::StringArray},
                                         {"py_stack", T::String},
                                         {"py_stack_depth", T::UInt16},
                                         {"count", T::UInt64, true}})});
  t.push_back({"handoff", "ebpf_handoff",
               concat(thread_columns(), {{"duration_ms", T::Float64},
                                         {"worker_tid", T::UInt32},
                                         {"worker_comm", T::Symbol},
                                         {"worker_thread_name", T::Symbol},
                                         {"main_tid", T::UInt32},
                                         {"main_comm", T::Symbol},
                                         {"main_thread_name", T::Symbol},
                                         {"worker_container_tid", T::UInt32},
                                         {"main_container_tid", T::UInt32},
                                         {"fd", T::Int32},
                                         {"queue_path", T::Symbol},
                                         {"pickup_via", T::Symbol},
                                         {"queued_time", T::Time},
                                         {"pickup_time", T::Time},
                                         {"handoff_ms", T::Float64}})});
  t.push_back({"tcp_connect", "ebpf_tcp_connect",
               concat(thread_columns(), {{"family", T::Symbol},
                                         {"src_ip", T::String},
                                         {"src_port", T::UInt16},
                                         {"dst_ip", T::String},
                                         {"dst_port", T::UInt16},
                                         {"handshake_us", T::UInt64},
                                         {"srtt_us", T::UInt32},
                                         {"outcome", T::Symbol}})});
  t.push_back({"tcp_accept", "ebpf_tcp_accept",
               concat(thread_columns(), {{"family", T::Symbol},
                                         {"peer_ip", T::String},
                                         {"peer_port", T::UInt16},
                                         {"local_ip", T::String},
                                         {"local_port", T::UInt16},
                                         {"syn_queue_len", T::UInt32},
                                         {"accept_queue_len", T::UInt32},
                                         {"accept_queue_max", T::UInt32},
                                         {"accept_dwell_us", T::UInt64},
                                         {"handshake_rtt_us", T::UInt32}})});
  t.push_back({"tcp_loss", "ebpf_tcp_loss",
               concat(host_columns(), {{"event", T::Symbol},
                                       {"pid", T::UInt32, true},
                                       {"tid", T::UInt32, true},
                                       {"comm", T::Symbol},
                                       {"thread_name", T::Symbol},
                                       {"family", T::Symbol},
                                       {"src_ip", T::String},
                                       {"src_port", T::UInt16},
                                       {"dst_ip", T::String},
                                       {"dst_port", T::UInt16},
                                       {"tcp_state", T::Symbol},
                                       {"srtt_us", T::UInt32},
                                       {"snd_cwnd", T::UInt32},
                                       {"total_retrans", T::UInt32},
                                       {"lost_out", T::UInt32},
                                       {"snd_wnd", T::UInt32},
                                       {"rcv_wnd", T::UInt32},
                                       {"suppressed", T::UInt64, true}})});
  t.push_back({"host_net_health", "ebpf_host_net_health",
               concat(host_columns(), {{"interface", T::Symbol},
                                       {"interval_s", T::UInt32},
                                       {"established_inbound", T::UInt32},
                                       {"established_outbound", T::UInt32},
                                       {"time_wait", T::UInt32},
                                       {"close_wait", T::UInt32},
                                       {"syn_sent", T::UInt32},
                                       {"syn_recv", T::UInt32},
                                       {"fin_wait", T::UInt32},
                                       {"last_ack", T::UInt32},
                                       {"closing", T::UInt32},
                                       {"max_time_wait_one_dst", T::UInt32},
                                       {"port_util_pct", T::Float64},
                                       {"delta_bw_in", T::Int64},
                                       {"delta_bw_out", T::Int64},
                                       {"delta_pps", T::Int64},
                                       {"delta_conntrack", T::Int64},
                                       {"delta_linklocal", T::Int64},
                                       {"conntrack_available", T::Int64},
                                       {"conntrack_count", T::Int64, true},
                                       {"total_bw_in", T::Int64},
                                       {"total_bw_out", T::Int64},
                                       {"total_pps", T::Int64},
                                       {"time_wait_top_dst_json", T::JsonText},
                                       {"fd_usage_json", T::JsonText},
                                       {"warnings", T::StringArray}})});
  return t;
}

}  // namespace

const std::vector<TableSchema>& known_tables() {
  static const std::vector<TableSchema> tables = build();
  return tables;
}

std::string table_name_for_metric(std::string_view metric) {
  std::string out = "ebpf_";
  for (char c : metric.substr(0, 48)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a'), ok = true;
    out += ok ? c : '_';
  }
  if (metric.empty()) out += "unknown";
  for (const auto& t : known_tables()) {
    if (t.table == out && t.metric != metric) return out + "_other";  // "py_stacks" must not land in ebpf_py_stacks
  }
  return out;
}

const TableSchema& table_for(std::string_view metric) {
  for (const auto& t : known_tables()) {
    if (t.metric == metric) return t;
  }
  // Writer threads of several sinks ask concurrently; map nodes never move.
  static std::mutex mutex;
  static std::map<std::string, TableSchema, std::less<>> generic;
  std::lock_guard lock(mutex);
  auto it = generic.find(metric);
  if (it == generic.end()) {
    TableSchema schema{std::string(metric), table_name_for_metric(metric), host_columns(), false};
    it = generic.emplace(std::string(metric), std::move(schema)).first;
  }
  return it->second;
}

}  // namespace pyebpf::sinks
