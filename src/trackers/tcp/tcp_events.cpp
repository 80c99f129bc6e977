// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp/tcp_events.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <map>

#include "sinks/report_text.hpp"
#include "trackers/tcp/tcp_format.hpp"

namespace pyebpf::trackers {

const TcpConnectSchema& tcp_connect_schema() {
  static const TcpConnectSchema schema;
  return schema;
}

const TcpAcceptSchema& tcp_accept_schema() {
  static const TcpAcceptSchema schema;
  return schema;
}

const TcpLossSchema& tcp_loss_schema() {
  static const TcpLossSchema schema;
  return schema;
}

namespace {

// The thread pointer alone is not a thread: glibc reuses it for the next one.
std::uint64_t thread_key(const pyebpf_event_header& hdr) {
  return hdr.thread_id ^ (static_cast<std::uint64_t>(hdr.pid) * 0x9e3779b97f4a7c15ULL) ^
         (static_cast<std::uint64_t>(hdr.tid) * 0xff51afd7ed558ccdULL);
}

// `<prefix>_ip`, `<prefix>_port`: one end of the connection.
void set_endpoint(sinks::Record& r, sinks::FieldId ip, sinks::FieldId port, const std::uint8_t* addr,
                  std::uint16_t port_value, std::uint16_t family) {
  r.set_text(ip, tcp::format_ip(addr, family));
  r.set_uint(port, port_value);
}

// Copies a whole struct out of the ring buffer; false if the size is not its size.
template <typename Event>
bool read_exact(const void* data, std::size_t size, Event& out) {
  if (size != sizeof(out)) return false;
  std::memcpy(&out, data, sizeof(out));
  return true;
}

}  // namespace

TcpDecoder::TcpDecoder(std::vector<std::string> rst_reasons)
    : rst_reasons_(std::move(rst_reasons)),
      connect_(tcp_connect_schema()),
      accept_(tcp_accept_schema()),
      loss_(tcp_loss_schema()) {}

std::string TcpDecoder::rst_reason_name(std::uint32_t reason) const {
  if (reason < rst_reasons_.size() && !rst_reasons_[reason].empty()) return rst_reasons_[reason];
  return std::to_string(reason);
}

void TcpDecoder::remember_thread(const DecodeContext& ctx, const pyebpf_event_header& hdr) {
  std::string comm = comm_text(hdr.comm);
  std::string name = thread_name(ctx, hdr.pid, hdr.thread_id, hdr.ns_tid, comm);
  if (name == comm && hdr.thread_id) {
    // The name cache may have been refreshed a moment ago for another thread
    // (it throttles refreshes): this thread is alive now, read again.
    name = ctx.targets.thread_name(static_cast<pid_t>(hdr.pid), hdr.thread_id, hdr.ns_tid, true).value_or(comm);
  }
  spdlog::debug("tcp: thread {} of pid {} ({}) owns its first socket: name '{}'", hdr.tid, hdr.pid, comm, name);
  if (early_names_.size() > 65536) early_names_.clear();
  if (name != comm)
    early_names_[thread_key(hdr)] = name;
  else
    early_names_.erase(thread_key(hdr));
}

// The thread fields of the socket's owner. thread_name: the current Python
// name, else the one read when the thread first owned a socket (it may be
// gone); empty for tid 0 (a socket the process held before tracing started:
// no thread is known).
void TcpDecoder::set_owner(sinks::Record& r, const DecodeContext& ctx, const pyebpf_event_header& hdr) {
  namespace tf = sinks::thread_fields;
  r.clear();
  set_thread_fields(r, ctx, hdr);
  if (!hdr.tid) {
    r.set_text(tf::thread_name, "");
  } else if (r.text(tf::thread_name) == r.text(tf::comm)) {
    auto it = early_names_.find(thread_key(hdr));
    if (it != early_names_.end()) r.set_text(tf::thread_name, it->second);
  }
}

Decoded TcpDecoder::decode_connect(const void* data, std::size_t size, const DecodeContext& ctx) {
  const TcpConnectSchema& s = tcp_connect_schema();
  pyebpf_tcp_connect_event ev{};
  if (!read_exact(data, size, ev)) return Decoded::Malformed;
  const auto& a = ev.addrs;
  auto outcome = tcp::classify_connect(static_cast<int>(ev.new_state), ev.sk_err, a.sport, ev.same_thread != 0);
  const std::uint64_t duration_us = ev.hdr.ts_ns > ev.start_ns ? (ev.hdr.ts_ns - ev.start_ns) / 1000 : 0;
  sinks::Record& r = connect_;
  set_owner(r, ctx, ev.hdr);
  r.set_text(s.family, tcp::family_name(a.family));
  set_endpoint(r, s.src_ip, s.src_port, a.saddr, a.sport, a.family);
  set_endpoint(r, s.dst_ip, s.dst_port, a.daddr, a.dport, a.family);
  // SYN sent -> ESTABLISHED. Not for failures: their duration is the SYN retry
  // timeout or the application's patience, reported as duration_us.
  if (outcome.outcome == "success")
    r.set_uint(s.handshake_us, duration_us);
  else
    r.set_null(s.handshake_us);
  r.set_uint(s.srtt_us, ev.srtt_us);
  r.set_text(s.outcome, outcome.outcome);
  if (outcome.error)
    r.set_text(s.error, *outcome.error);
  else
    r.set_null(s.error);
  r.set_uint(s.duration_us, duration_us);
  r.set_uint(s.syn_retransmits, ev.total_retrans);
  r.set_uint(s.netns, a.netns);
  return Decoded::Event;
}

Decoded TcpDecoder::decode_accept(const void* data, std::size_t size, const DecodeContext& ctx) {
  const TcpAcceptSchema& s = tcp_accept_schema();
  pyebpf_tcp_accept_event ev{};
  if (!read_exact(data, size, ev)) return Decoded::Malformed;
  const auto& a = ev.addrs;
  const bool established = ev.flags & PYEBPF_ACCEPT_HAVE_ESTABLISHED;
  const bool listener = ev.flags & PYEBPF_ACCEPT_HAVE_LISTENER;
  sinks::Record& r = accept_;
  set_owner(r, ctx, ev.hdr);
  r.set_text(s.family, tcp::family_name(a.family));
  set_endpoint(r, s.peer_ip, s.peer_port, a.daddr, a.dport, a.family);
  set_endpoint(r, s.local_ip, s.local_port, a.saddr, a.sport, a.family);
  auto optional = [&](sinks::FieldId f, bool known, std::uint64_t v) {
    if (known)
      r.set_uint(f, v);
    else
      r.set_null(f);
  };
  optional(s.syn_queue_len, listener, ev.syn_queue_len);
  optional(s.accept_queue_len, listener, ev.accept_queue_len);
  optional(s.accept_queue_max, listener, ev.accept_queue_max);
  // null: the handshake completed before tracing started.
  optional(s.accept_dwell_us, established, (ev.hdr.ts_ns - ev.established_ns) / 1000);
  optional(s.handshake_rtt_us, ev.flags & PYEBPF_ACCEPT_HAVE_RTT, ev.handshake_rtt_us);
  optional(s.synack_retransmits, established, ev.synack_retrans);
  r.set_uint(s.netns, a.netns);
  return Decoded::Event;
}

// What the kind of loss event adds: segments, a reset's reason, probes, ...
void TcpDecoder::set_loss_detail(const pyebpf_tcp_loss_event& ev) {
  const TcpLossSchema& s = tcp_loss_schema();
  if (!(ev.flags & PYEBPF_LOSS_HAVE_DETAIL)) return;
  switch (ev.type) {
    case PYEBPF_LOSS_RETRANSMIT:
      loss_.set_uint(s.segments, ev.detail);
      break;
    case PYEBPF_LOSS_SEND_RST:
      loss_.set_text(s.rst_reason, rst_reason_name(ev.detail));
      break;
    case PYEBPF_LOSS_ZERO_WINDOW:
      loss_.set_uint(s.probes, ev.detail);
      break;
    case PYEBPF_LOSS_LOSS:
    case PYEBPF_LOSS_RECOVERY:
      loss_.set_text(s.prev_ca_state, tcp::ca_state_name(static_cast<int>(ev.detail)));
      break;
    case PYEBPF_LOSS_SYNACK_RETRANSMIT:
      loss_.set_uint(s.synack_attempt, ev.detail);
      break;
    default:
      break;
  }
}

Decoded TcpDecoder::decode_loss(const void* data, std::size_t size, const DecodeContext& ctx) {
  const TcpLossSchema& s = tcp_loss_schema();
  pyebpf_tcp_loss_event ev{};
  if (!read_exact(data, size, ev)) return Decoded::Malformed;
  const auto& a = ev.addrs;
  const bool full = ev.flags & PYEBPF_LOSS_FULL_SOCK;
  sinks::Record& r = loss_;
  set_owner(r, ctx, ev.hdr);
  r.set_text(s.event, tcp::loss_event_name(ev.type));
  r.set_text(s.family, tcp::family_name(a.family));
  set_endpoint(r, s.src_ip, s.src_port, a.saddr, a.sport, a.family);
  set_endpoint(r, s.dst_ip, s.dst_port, a.daddr, a.dport, a.family);
  if (ev.tcp_state)
    r.set_text(s.tcp_state, tcp::state_name(ev.tcp_state));
  else
    r.set_null(s.tcp_state);
  if (full)
    r.set_text(s.ca_state, tcp::ca_state_name(ev.ca_state));
  else
    r.set_null(s.ca_state);
  const std::pair<sinks::FieldId, std::uint32_t> congestion[] = {
      {s.srtt_us, ev.srtt_us},         {s.snd_cwnd, ev.snd_cwnd},      {s.total_retrans, ev.total_retrans},
      {s.lost_out, ev.lost_out},       {s.snd_wnd, ev.snd_wnd},        {s.rcv_wnd, ev.rcv_wnd},
      {s.packets_out, ev.packets_out}, {s.retrans_out, ev.retrans_out}};
  for (const auto& [f, v] : congestion) {
    if (full)
      r.set_uint(f, v);
    else
      r.set_null(f);
  }
  set_loss_detail(ev);
  // false: no target thread owns the socket (--net-scope host); pid/tid are 0.
  r.set_bool(s.owner_known, (ev.flags & PYEBPF_LOSS_OWNER_KNOWN) != 0);
  r.set_uint(s.netns, a.netns);
  return Decoded::Event;
}

Decoded TcpDecoder::decode(const void* data, std::size_t size, const DecodeContext& ctx, const sinks::Record*& out) {
  std::uint32_t kind = 0;
  if (size < sizeof(kind)) return Decoded::Malformed;
  std::memcpy(&kind, data, sizeof(kind));
  Decoded decoded = Decoded::Malformed;
  const sinks::Record* record = nullptr;
  switch (kind) {
    case PYEBPF_TCP_CONNECT:
      decoded = decode_connect(data, size, ctx);
      record = &connect_;
      break;
    case PYEBPF_TCP_ACCEPT:
      decoded = decode_accept(data, size, ctx);
      record = &accept_;
      break;
    case PYEBPF_TCP_LOSS:
      decoded = decode_loss(data, size, ctx);
      record = &loss_;
      break;
    case PYEBPF_TCP_THREAD: {
      pyebpf_tcp_thread_event ev{};
      if (!read_exact(data, size, ev)) return Decoded::Malformed;
      remember_thread(ctx, ev.hdr);
      return Decoded::Skipped;
    }
    default:
      return Decoded::Malformed;
  }
  if (decoded == Decoded::Event) out = record;
  return decoded;
}

namespace {

using namespace sinks::report;

// Latency p50/p99 by outcome (SYN to established, or to the failure).
class TcpConnectSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const TcpConnectSchema& s = tcp_connect_schema();
    // SYN -> established for successes, SYN -> outcome (duration_us) for the others.
    double us = r.number(s.handshake_us).value_or(r.number(s.duration_us).value_or(0));
    by_outcome_[field_text(r, s.outcome)].add(us / 1000.0);
  }
  void render(std::string& out) const override {
    if (by_outcome_.empty()) return;
    std::uint64_t n = 0;
    for (const auto& [o, d] : by_outcome_) n += d.count();
    heading(out,
            fmt::format("TCP connect latency (SYN to established, or to the failure)  [tcp_connect: {} connects]", n));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [outcome, d] : by_outcome_)
      rows.push_back({outcome, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    table(out, {{"outcome", 10}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}},
          rows);
  }

 private:
  std::map<std::string, Distribution> by_outcome_;  // outcome -> ms
};

// Accept-queue dwell and handshake RTT; how often the accept queue was full.
class TcpAcceptSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const TcpAcceptSchema& s = tcp_accept_schema();
    ++accepts_;
    if (auto d = r.number(s.accept_dwell_us)) dwell_.add(*d / 1000.0);
    if (auto rtt = r.number(s.handshake_rtt_us)) rtt_.add(*rtt / 1000.0);
    auto len = r.number(s.accept_queue_len), max = r.number(s.accept_queue_max);
    if (len && max && *max > 0 && *len >= *max) ++queue_full_;
  }
  void render(std::string& out) const override {
    if (dwell_.count() + rtt_.count() == 0) return;
    heading(out, fmt::format("TCP accept  [tcp_accept: {} accepts; accept queue full at {} of them]", accepts_,
                             queue_full_));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const char* what, const Distribution& d) {
      if (d.count())
        rows.push_back({what, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    };
    row("accept-queue dwell", dwell_);
    row("handshake rtt", rtt_);
    table(out, {{"", 18}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}}, rows);
  }

 private:
  Distribution dwell_, rtt_;
  std::uint64_t accepts_ = 0, queue_full_ = 0;
};

// Loss events by kind, and the peers that saw most.
class TcpLossSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const TcpLossSchema& s = tcp_loss_schema();
    ++events_[field_text(r, s.event)];
    std::string peer = field_text(r, s.dst_ip) + ":" + field_text(r, s.dst_port);
    if (peers_.size() < kMaxKeys || peers_.count(peer)) ++peers_[peer];
  }
  void render(std::string& out) const override {
    if (events_.empty()) return;
    std::uint64_t n = 0;
    for (const auto& [k, v] : events_) n += v;
    heading(out, fmt::format("TCP loss  [tcp_loss: {} events]", n));
    std::vector<std::string> kinds, peers;
    for (const auto& [k, v] : top(
             events_, [](std::uint64_t x) { return static_cast<double>(x); }, 20))
      kinds.push_back(fmt::format("{} {}", k, v));
    wrapped(out, "  by event:", kinds);
    for (const auto& [k, v] : top(
             peers_, [](std::uint64_t x) { return static_cast<double>(x); }, 5))
      peers.push_back(fmt::format("{} {}", k, v));
    wrapped(out, "  top peers:", peers);
  }

 private:
  std::map<std::string, std::uint64_t> events_, peers_;
};

// The TCP part of the report: each enabled part's section, in order.
class TcpSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    if (&r.schema() == &tcp_connect_schema())
      connect_.add(r);
    else if (&r.schema() == &tcp_accept_schema())
      accept_.add(r);
    else
      loss_.add(r);
  }
  void render(std::string& out) const override {
    connect_.render(out);
    accept_.render(out);
    loss_.render(out);
  }

 private:
  TcpConnectSection connect_;
  TcpAcceptSection accept_;
  TcpLossSection loss_;
};

}  // namespace

std::unique_ptr<sinks::ReportSection> make_tcp_report() {
  return std::make_unique<TcpSection>();
}

}  // namespace pyebpf::trackers
