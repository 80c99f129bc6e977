// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_connect.hpp"

#include <fmt/format.h>

#include "trackers/tcp_format.hpp"

namespace pyebpf::trackers {

TcpConnectTracker::TcpConnectTracker() : TcpTrackerBase(TcpSession::Kind::Connect) {
  session_->on_connect([this](const pyebpf_tcp_connect_event& ev) { handle(ev); });
}

void TcpConnectTracker::handle(const pyebpf_tcp_connect_event& ev) {
  const auto& a = ev.addrs;
  auto outcome = tcp::classify_connect(static_cast<int>(ev.new_state), ev.sk_err, a.sport, ev.same_thread != 0);
  const std::uint64_t duration_us = ev.hdr.ts_ns > ev.start_ns ? (ev.hdr.ts_ns - ev.start_ns) / 1000 : 0;
  const bool success = outcome.outcome == "success";

  sinks::Event e = begin_event("tcp_connect", ev.hdr);
  e["family"] = tcp::family_name(a.family);
  add_endpoint(e, "src", a.saddr, a.sport, a.family);
  add_endpoint(e, "dst", a.daddr, a.dport, a.family);
  // SYN sent -> ESTABLISHED. Not for failures: their duration is the SYN retry
  // timeout or the application's patience, reported as duration_us.
  e["handshake_us"] = success ? nlohmann::ordered_json(duration_us) : nlohmann::ordered_json();
  e["srtt_us"] = ev.srtt_us;
  e["outcome"] = outcome.outcome;
  e["error"] = outcome.error ? nlohmann::ordered_json(*outcome.error) : nlohmann::ordered_json();
  e["duration_us"] = duration_us;
  e["syn_retransmits"] = ev.total_retrans;
  e["netns"] = a.netns;
  ctx_->sink.write(e);
  ++emitted_;
  ++outcomes_[outcome.outcome];
}

std::string TcpConnectTracker::summary() const {
  std::string by_outcome;
  for (const auto& [outcome, n] : outcomes_)
    by_outcome += fmt::format("{}{} {}", by_outcome.empty() ? "" : ", ", n, outcome);
  return fmt::format("tcp_connect: {} handshakes reported ({}), {} lost (ring buffer full)", emitted_,
                     by_outcome.empty() ? "none" : by_outcome, counter(PYEBPF_TCP_CNT_LOST_CONNECT));
}

}  // namespace pyebpf::trackers
