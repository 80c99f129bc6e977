// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_accept.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "trackers/tcp_format.hpp"

namespace pyebpf::trackers {

using Json = nlohmann::ordered_json;

TcpAcceptTracker::TcpAcceptTracker() : TcpTrackerBase(TcpSession::Kind::Accept) {
  session_->on_accept([this](const pyebpf_tcp_accept_event& ev) { handle(ev); });
}

void TcpAcceptTracker::handle(const pyebpf_tcp_accept_event& ev) {
  const auto& a = ev.addrs;
  const bool established = ev.flags & PYEBPF_ACCEPT_HAVE_ESTABLISHED;
  const bool listener = ev.flags & PYEBPF_ACCEPT_HAVE_LISTENER;
  const std::uint64_t dwell_us = established ? (ev.hdr.ts_ns - ev.established_ns) / 1000 : 0;

  sinks::Event e = begin_event("tcp_accept", ev.hdr);
  e["family"] = tcp::family_name(a.family);
  add_endpoint(e, "peer", a.daddr, a.dport, a.family);
  add_endpoint(e, "local", a.saddr, a.sport, a.family);
  e["syn_queue_len"] = listener ? Json(ev.syn_queue_len) : Json();
  e["accept_queue_len"] = listener ? Json(ev.accept_queue_len) : Json();
  e["accept_queue_max"] = listener ? Json(ev.accept_queue_max) : Json();
  // null: the handshake completed before tracing started.
  e["accept_dwell_us"] = established ? Json(dwell_us) : Json();
  e["handshake_rtt_us"] = (ev.flags & PYEBPF_ACCEPT_HAVE_RTT) ? Json(ev.handshake_rtt_us) : Json();
  e["synack_retransmits"] = established ? Json(ev.synack_retrans) : Json();
  e["netns"] = a.netns;
  ctx_->sink.write(e);
  ++emitted_;
  max_dwell_us_ = std::max(max_dwell_us_, dwell_us);
}

std::string TcpAcceptTracker::summary() const {
  return fmt::format(
      "tcp_accept: {} connections accepted, longest accept-queue wait {:.3f} ms, {} without handshake data "
      "(established before tracing), {} lost (ring buffer full){}",
      emitted_, static_cast<double>(max_dwell_us_) / 1000.0, counter(PYEBPF_TCP_CNT_ACCEPT_NO_HANDSHAKE),
      counter(PYEBPF_TCP_CNT_LOST_ACCEPT),
      session_->unhooked() ? fmt::format(", {} target(s) not hooked (see the warnings)", session_->unhooked()) : "");
}

}  // namespace pyebpf::trackers
