// SPDX-License-Identifier: Apache-2.0
// host_net_health snapshots: their schema and the report's section.
#pragma once

#include <memory>

#include "sinks/report.hpp"
#include "sinks/schema.hpp"

namespace pyebpf::trackers {

struct HostNetHealthSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  HostNetHealthSchema() : TableSchema("host_net_health", "ebpf_host_net_health", Prefix::Host) {}
  const sinks::FieldId netns = add("netns", T::UInt64);
  const sinks::FieldId netns_of = add("netns_of", T::Symbol);
  const sinks::FieldId pid = add("pid", T::UInt32, true);
  const sinks::FieldId pids = add("pids", T::Json);
  const sinks::FieldId interface = add("interface", T::Symbol);
  const sinks::FieldId driver = add("driver", T::Symbol);
  const sinks::FieldId interval_s = add("interval_s", T::UInt32);
  const sinks::FieldId window_s = add("window_s", T::Float64);
  // TCP states (sock_diag), in the network namespace
  const sinks::FieldId established_inbound = add("established_inbound", T::UInt32);
  const sinks::FieldId established_outbound = add("established_outbound", T::UInt32);
  const sinks::FieldId time_wait = add("time_wait", T::UInt32);
  const sinks::FieldId close_wait = add("close_wait", T::UInt32);
  const sinks::FieldId syn_sent = add("syn_sent", T::UInt32);
  const sinks::FieldId syn_recv = add("syn_recv", T::UInt32);
  const sinks::FieldId fin_wait = add("fin_wait", T::UInt32);
  const sinks::FieldId last_ack = add("last_ack", T::UInt32);
  const sinks::FieldId closing = add("closing", T::UInt32);
  const sinks::FieldId listen = add("listen", T::UInt32);
  const sinks::FieldId sockets = add("sockets", T::UInt32);
  const sinks::FieldId max_time_wait_one_dst = add("max_time_wait_one_dst", T::UInt32);
  const sinks::FieldId time_wait_top_dst = add("time_wait_top_dst", T::Json);
  const sinks::FieldId port_util_pct = add("port_util_pct", T::Float64);
  const sinks::FieldId port_util_dst = add("port_util_dst", T::String);
  const sinks::FieldId ephemeral_ports = add("ephemeral_ports", T::UInt32);
  // Interface and conntrack figures are -1 where the driver/kernel has none.
  const sinks::FieldId delta_bw_in = add("delta_bw_in", T::Int64);
  const sinks::FieldId delta_bw_out = add("delta_bw_out", T::Int64);
  const sinks::FieldId delta_pps = add("delta_pps", T::Int64);
  const sinks::FieldId delta_conntrack = add("delta_conntrack", T::Int64);
  const sinks::FieldId delta_linklocal = add("delta_linklocal", T::Int64);
  const sinks::FieldId conntrack_available = add("conntrack_available", T::Int64);
  const sinks::FieldId total_bw_in = add("total_bw_in", T::Int64);
  const sinks::FieldId total_bw_out = add("total_bw_out", T::Int64);
  const sinks::FieldId total_pps = add("total_pps", T::Int64);
  // Interface counters (/proc/net/dev), then their change over the window.
  const sinks::FieldId rx_bytes = add("rx_bytes", T::Int64);
  const sinks::FieldId tx_bytes = add("tx_bytes", T::Int64);
  const sinks::FieldId rx_packets = add("rx_packets", T::Int64);
  const sinks::FieldId tx_packets = add("tx_packets", T::Int64);
  const sinks::FieldId rx_errors = add("rx_errors", T::Int64);
  const sinks::FieldId tx_errors = add("tx_errors", T::Int64);
  const sinks::FieldId rx_dropped = add("rx_dropped", T::Int64);
  const sinks::FieldId tx_dropped = add("tx_dropped", T::Int64);
  const sinks::FieldId delta_rx_bytes = add("delta_rx_bytes", T::Int64);
  const sinks::FieldId delta_tx_bytes = add("delta_tx_bytes", T::Int64);
  const sinks::FieldId delta_rx_packets = add("delta_rx_packets", T::Int64);
  const sinks::FieldId delta_tx_packets = add("delta_tx_packets", T::Int64);
  const sinks::FieldId delta_rx_errors = add("delta_rx_errors", T::Int64);
  const sinks::FieldId delta_tx_errors = add("delta_tx_errors", T::Int64);
  const sinks::FieldId delta_rx_dropped = add("delta_rx_dropped", T::Int64);
  const sinks::FieldId delta_tx_dropped = add("delta_tx_dropped", T::Int64);
  const sinks::FieldId conntrack_count = add("conntrack_count", T::Int64);
  const sinks::FieldId conntrack_max = add("conntrack_max", T::Int64);
  const sinks::FieldId fd_usage = add("fd_usage", T::Json);
  const sinks::FieldId fd_util_max_pct = add("fd_util_max_pct", T::Float64);
  const sinks::FieldId warnings = add("warnings", T::StringArray);
};
const HostNetHealthSchema& host_net_health_schema();

std::unique_ptr<sinks::ReportSection> make_host_net_health_report();

}  // namespace pyebpf::trackers
