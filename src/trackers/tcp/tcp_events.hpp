// SPDX-License-Identifier: Apache-2.0
// tcp_connect, tcp_accept and tcp_loss events: their schemas, the decoder of
// the TCP ring buffer (bpf/tcp.bpf.c sends all three kinds, and thread
// records) and the report's TCP sections.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sinks/report.hpp"
#include "tcp.h"
#include "trackers/common/event_fields.hpp"

namespace pyebpf::trackers {

struct TcpConnectSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  TcpConnectSchema() : TableSchema("tcp_connect", "ebpf_tcp_connect", Prefix::Thread) {}
  const sinks::FieldId family = add("family", T::Symbol);
  const sinks::FieldId src_ip = add("src_ip", T::String);
  const sinks::FieldId src_port = add("src_port", T::UInt16);
  const sinks::FieldId dst_ip = add("dst_ip", T::String);
  const sinks::FieldId dst_port = add("dst_port", T::UInt16);
  const sinks::FieldId handshake_us = add("handshake_us", T::UInt64, true);  // successful connects only
  const sinks::FieldId srtt_us = add("srtt_us", T::UInt32);
  const sinks::FieldId outcome = add("outcome", T::Symbol);
  const sinks::FieldId error = add("error", T::Symbol, true);
  const sinks::FieldId duration_us = add("duration_us", T::UInt64);
  const sinks::FieldId syn_retransmits = add("syn_retransmits", T::UInt32);
  const sinks::FieldId netns = add("netns", T::UInt32);
};
const TcpConnectSchema& tcp_connect_schema();

struct TcpAcceptSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  TcpAcceptSchema() : TableSchema("tcp_accept", "ebpf_tcp_accept", Prefix::Thread) {}
  const sinks::FieldId family = add("family", T::Symbol);
  const sinks::FieldId peer_ip = add("peer_ip", T::String);
  const sinks::FieldId peer_port = add("peer_port", T::UInt16);
  const sinks::FieldId local_ip = add("local_ip", T::String);
  const sinks::FieldId local_port = add("local_port", T::UInt16);
  const sinks::FieldId syn_queue_len = add("syn_queue_len", T::UInt32, true);
  const sinks::FieldId accept_queue_len = add("accept_queue_len", T::UInt32, true);
  const sinks::FieldId accept_queue_max = add("accept_queue_max", T::UInt32, true);
  const sinks::FieldId accept_dwell_us = add("accept_dwell_us", T::UInt64, true);  // null: established before tracing
  const sinks::FieldId handshake_rtt_us = add("handshake_rtt_us", T::UInt32, true);
  const sinks::FieldId synack_retransmits = add("synack_retransmits", T::UInt32, true);
  const sinks::FieldId netns = add("netns", T::UInt32);
};
const TcpAcceptSchema& tcp_accept_schema();

// The owner's thread fields: pid/tid 0 where no owner is known (--net-scope host).
struct TcpLossSchema : sinks::TableSchema {
  using T = sinks::ColumnType;
  TcpLossSchema() : TableSchema("tcp_loss", "ebpf_tcp_loss", Prefix::Thread) {}
  const sinks::FieldId event = add("event", T::Symbol);
  const sinks::FieldId family = add("family", T::Symbol);
  const sinks::FieldId src_ip = add("src_ip", T::String);
  const sinks::FieldId src_port = add("src_port", T::UInt16);
  const sinks::FieldId dst_ip = add("dst_ip", T::String);
  const sinks::FieldId dst_port = add("dst_port", T::UInt16);
  const sinks::FieldId tcp_state = add("tcp_state", T::Symbol, true);
  const sinks::FieldId ca_state = add("ca_state", T::Symbol, true);
  // null for resets answered by request or TIME_WAIT sockets
  const sinks::FieldId srtt_us = add("srtt_us", T::UInt32, true);
  const sinks::FieldId snd_cwnd = add("snd_cwnd", T::UInt32, true);
  const sinks::FieldId total_retrans = add("total_retrans", T::UInt32, true);
  const sinks::FieldId lost_out = add("lost_out", T::UInt32, true);
  const sinks::FieldId snd_wnd = add("snd_wnd", T::UInt32, true);
  const sinks::FieldId rcv_wnd = add("rcv_wnd", T::UInt32, true);
  const sinks::FieldId packets_out = add("packets_out", T::UInt32, true);
  const sinks::FieldId retrans_out = add("retrans_out", T::UInt32, true);
  const sinks::FieldId segments = add("segments", T::UInt32, true);            // retransmit
  const sinks::FieldId rst_reason = add("rst_reason", T::Symbol, true);        // send_rst
  const sinks::FieldId probes = add("probes", T::UInt32, true);                // zero_window
  const sinks::FieldId prev_ca_state = add("prev_ca_state", T::Symbol, true);  // loss, recovery
  const sinks::FieldId synack_attempt = add("synack_attempt", T::UInt32, true);
  const sinks::FieldId owner_known = add("owner_known", T::Bool);
  const sinks::FieldId netns = add("netns", T::UInt32);
};
const TcpLossSchema& tcp_loss_schema();

// The TCP ring buffer's records into tcp_connect, tcp_accept or tcp_loss
// records. Thread records (a target thread owns its first socket) are kept
// here: a thread's Python name read then names its later events even after
// the thread is gone.
class TcpDecoder {
 public:
  // `rst_reasons`: enum sk_rst_reason names by value (from kernel BTF), if any.
  explicit TcpDecoder(std::vector<std::string> rst_reasons = {});

  // Fills one of this decoder's records and points `out` at it.
  Decoded decode(const void* data, std::size_t size, const DecodeContext& ctx, const sinks::Record*& out);
  // "TCP_ABORT_ON_CLOSE" for an enum sk_rst_reason value, else the number.
  std::string rst_reason_name(std::uint32_t reason) const;

 private:
  // Each fills its record from one ring record, or returns Malformed.
  Decoded decode_connect(const void* data, std::size_t size, const DecodeContext& ctx);
  Decoded decode_accept(const void* data, std::size_t size, const DecodeContext& ctx);
  Decoded decode_loss(const void* data, std::size_t size, const DecodeContext& ctx);
  void set_loss_detail(const pyebpf_tcp_loss_event& ev);
  void remember_thread(const DecodeContext& ctx, const pyebpf_event_header& hdr);
  void set_owner(sinks::Record& r, const DecodeContext& ctx, const pyebpf_event_header& hdr);

  std::vector<std::string> rst_reasons_;
  // (pid << 64 | thread pointer) would not fit a key: pid, tid and ident hashed together.
  std::unordered_map<std::uint64_t, std::string> early_names_;
  sinks::Record connect_, accept_, loss_;
};

// Connect latency by outcome, accept-queue dwell, loss events by kind and peer.
std::unique_ptr<sinks::ReportSection> make_tcp_report();

}  // namespace pyebpf::trackers
