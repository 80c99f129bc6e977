// SPDX-License-Identifier: Apache-2.0
#include "sinks/schema.hpp"

#include <map>
#include <mutex>

namespace pyebpf::sinks {
namespace {

using T = ColumnType;

// Fields every thread-level event starts with (trackers/event_fields.hpp).
std::vector<Column> thread_columns() {
  return {{"env", T::Symbol},           {"ts", T::Time},     {"ts_us", T::Int64},
          {"pid", T::UInt32},           {"tid", T::UInt32},  {"container_pid", T::UInt32},
          {"container_tid", T::UInt32}, {"comm", T::Symbol}, {"thread_name", T::Symbol}};
}

// Fields of host-level events (network trackers attribute a process where they can).
std::vector<Column> host_columns() {
  return {{"env", T::Symbol}, {"ts", T::Time}, {"ts_us", T::Int64}};
}

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
                                         {"handshake_us", T::UInt64, true},  // successful connects only
                                         {"srtt_us", T::UInt32},
                                         {"outcome", T::Symbol},
                                         {"error", T::Symbol, true},
                                         {"duration_us", T::UInt64},
                                         {"syn_retransmits", T::UInt32},
                                         {"netns", T::UInt32}})});
  t.push_back({"tcp_accept", "ebpf_tcp_accept",
               concat(thread_columns(), {{"family", T::Symbol},
                                         {"peer_ip", T::String},
                                         {"peer_port", T::UInt16},
                                         {"local_ip", T::String},
                                         {"local_port", T::UInt16},
                                         {"syn_queue_len", T::UInt32, true},
                                         {"accept_queue_len", T::UInt32, true},
                                         {"accept_queue_max", T::UInt32, true},
                                         {"accept_dwell_us", T::UInt64, true},  // null: established before tracing
                                         {"handshake_rtt_us", T::UInt32, true},
                                         {"synack_retransmits", T::UInt32, true},
                                         {"netns", T::UInt32}})});
  // The owner's thread columns: pid/tid 0 where no owner is known (--net-scope host).
  t.push_back({"tcp_loss", "ebpf_tcp_loss",
               concat(thread_columns(), {{"event", T::Symbol},
                                         {"family", T::Symbol},
                                         {"src_ip", T::String},
                                         {"src_port", T::UInt16},
                                         {"dst_ip", T::String},
                                         {"dst_port", T::UInt16},
                                         {"tcp_state", T::Symbol, true},
                                         {"ca_state", T::Symbol, true},
                                         // null for resets answered by request or TIME_WAIT sockets
                                         {"srtt_us", T::UInt32, true},
                                         {"snd_cwnd", T::UInt32, true},
                                         {"total_retrans", T::UInt32, true},
                                         {"lost_out", T::UInt32, true},
                                         {"snd_wnd", T::UInt32, true},
                                         {"rcv_wnd", T::UInt32, true},
                                         {"packets_out", T::UInt32, true},
                                         {"retrans_out", T::UInt32, true},
                                         {"segments", T::UInt32, true},       // retransmit
                                         {"rst_reason", T::Symbol, true},     // send_rst
                                         {"probes", T::UInt32, true},         // zero_window
                                         {"prev_ca_state", T::Symbol, true},  // loss, recovery
                                         {"synack_attempt", T::UInt32, true},
                                         {"owner_known", T::Bool},
                                         {"netns", T::UInt32}})});
  // handoff's periodic summary (not a table of the original tool, whose
  // equivalents went to Elasticsearch).
  t.push_back({"request_queue", "ebpf_request_queue",
               concat(host_columns(), {{"pid", T::UInt32},
                                       {"container_pid", T::UInt32},
                                       {"comm", T::Symbol},
                                       {"interval_s", T::Float64},
                                       {"queued_now", T::UInt64},
                                       {"queued_max", T::UInt64},
                                       {"oldest_queued_ms", T::Float64},
                                       {"queued", T::UInt64},
                                       {"picked_up", T::UInt64},
                                       {"cancelled", T::UInt64},
                                       {"served_inline", T::UInt64},
                                       {"peer_closed", T::UInt64},
                                       {"handoff_mean_ms", T::Float64},
                                       {"handoff_p50_ms", T::Float64},
                                       {"handoff_p99_ms", T::Float64},
                                       {"threads_used", T::UInt32}})});
  std::vector<Column> net;
  for (const char* c :
       {"established_inbound", "established_outbound", "time_wait", "close_wait", "syn_sent", "syn_recv", "fin_wait",
        "last_ack", "closing", "listen", "sockets", "max_time_wait_one_dst", "ephemeral_ports"})
    net.push_back({c, T::UInt32});
  // Interface and conntrack figures are -1 where the driver/kernel has none.
  for (const char* c : {"delta_bw_in",      "delta_bw_out",     "delta_pps",
                        "delta_conntrack",  "delta_linklocal",  "conntrack_available",
                        "total_bw_in",      "total_bw_out",     "total_pps",
                        "rx_bytes",         "tx_bytes",         "rx_packets",
                        "tx_packets",       "rx_errors",        "tx_errors",
                        "rx_dropped",       "tx_dropped",       "delta_rx_bytes",
                        "delta_tx_bytes",   "delta_rx_packets", "delta_tx_packets",
                        "delta_rx_errors",  "delta_tx_errors",  "delta_rx_dropped",
                        "delta_tx_dropped", "conntrack_count",  "conntrack_max"})
    net.push_back({c, T::Int64});
  t.push_back({"host_net_health", "ebpf_host_net_health",
               concat(concat(host_columns(), {{"netns", T::UInt64},
                                              {"netns_of", T::Symbol},
                                              {"pid", T::UInt32, true},
                                              {"pids", T::Json},
                                              {"interface", T::Symbol},
                                              {"driver", T::Symbol},
                                              {"interval_s", T::UInt32},
                                              {"window_s", T::Float64},
                                              {"time_wait_top_dst", T::Json},
                                              {"port_util_pct", T::Float64},
                                              {"port_util_dst", T::String},
                                              {"fd_usage", T::Json},
                                              {"fd_util_max_pct", T::Float64},
                                              {"warnings", T::StringArray}}),
                      net)});
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
