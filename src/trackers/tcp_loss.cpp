// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_loss.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "trackers/tcp_format.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::uint64_t kWarnEveryNs = 10'000'000'000;

}  // namespace

TcpLossTracker::TcpLossTracker() : TcpTrackerBase(TcpSession::Kind::Loss) {
  session_->on_loss([this](const pyebpf_tcp_loss_event& ev) { handle(ev); });
}

void TcpLossTracker::handle(const pyebpf_tcp_loss_event& ev) {
  const auto& a = ev.addrs;
  const bool full = ev.flags & PYEBPF_LOSS_FULL_SOCK;
  auto cc = [&](std::uint32_t v) { return full ? Json(v) : Json(); };

  sinks::Event e = begin_event("tcp_loss", ev.hdr);
  e["event"] = tcp::loss_event_name(ev.type);
  e["family"] = tcp::family_name(a.family);
  add_endpoint(e, "src", a.saddr, a.sport, a.family);
  add_endpoint(e, "dst", a.daddr, a.dport, a.family);
  e["tcp_state"] = ev.tcp_state ? Json(tcp::state_name(ev.tcp_state)) : Json();
  e["ca_state"] = full ? Json(tcp::ca_state_name(ev.ca_state)) : Json();
  e["srtt_us"] = cc(ev.srtt_us);
  e["snd_cwnd"] = cc(ev.snd_cwnd);
  e["total_retrans"] = cc(ev.total_retrans);
  e["lost_out"] = cc(ev.lost_out);
  e["snd_wnd"] = cc(ev.snd_wnd);
  e["rcv_wnd"] = cc(ev.rcv_wnd);
  e["packets_out"] = cc(ev.packets_out);
  e["retrans_out"] = cc(ev.retrans_out);
  if (ev.flags & PYEBPF_LOSS_HAVE_DETAIL) {
    switch (ev.type) {
      case PYEBPF_LOSS_RETRANSMIT:
        e["segments"] = ev.detail;
        break;
      case PYEBPF_LOSS_SEND_RST:
        e["rst_reason"] = session_->rst_reason_name(ev.detail);
        break;
      case PYEBPF_LOSS_ZERO_WINDOW:
        e["probes"] = ev.detail;
        break;
      case PYEBPF_LOSS_LOSS:
      case PYEBPF_LOSS_RECOVERY:
        e["prev_ca_state"] = tcp::ca_state_name(static_cast<int>(ev.detail));
        break;
      case PYEBPF_LOSS_SYNACK_RETRANSMIT:
        e["synack_attempt"] = ev.detail;
        break;
      default:
        break;
    }
  }
  // false: no target thread owns the socket (--net-scope host); pid/tid are 0.
  e["owner_known"] = (ev.flags & PYEBPF_LOSS_OWNER_KNOWN) != 0;
  e["netns"] = a.netns;
  ctx_->sink.write(e);
  if (ev.type < PYEBPF_LOSS_TYPES) ++emitted_[ev.type];
  if (!(ev.flags & PYEBPF_LOSS_OWNER_KNOWN)) ++unowned_;
}

std::uint64_t TcpLossTracker::suppressed_total() const {
  auto c = session_->counters();
  std::uint64_t n = 0;
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) n += c[PYEBPF_TCP_CNT_SUPPRESSED + t];
  return n;
}

void TcpLossTracker::tick() {
  TcpTrackerBase::tick();
  const std::uint64_t now = monotonic_ns();
  if (now - last_warning_ns_ < kWarnEveryNs) return;
  const std::uint64_t suppressed = suppressed_total();
  if (suppressed > warned_suppressed_) {
    spdlog::warn("tcp_loss: rate limit of {} events/s reached: {} events suppressed (counted in the summary)",
                 ctx_->options.loss_rate_limit, suppressed - warned_suppressed_);
    warned_suppressed_ = suppressed;
    last_warning_ns_ = now;
  }
}

std::string TcpLossTracker::summary() const {
  auto c = session_->counters();
  std::string kinds, suppressed;
  std::uint64_t total = 0, total_suppressed = 0;
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) {
    total += emitted_[t];
    if (emitted_[t]) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", emitted_[t], tcp::loss_event_name(t));
    std::uint64_t s = c[PYEBPF_TCP_CNT_SUPPRESSED + t];
    total_suppressed += s;
    if (s) suppressed += fmt::format("{}{} {}", suppressed.empty() ? "" : ", ", s, tcp::loss_event_name(t));
  }
  std::string out = fmt::format("tcp_loss: {} events ({})", total, kinds.empty() ? "none" : kinds);
  out += fmt::format(", {} suppressed by --loss-rate-limit{}", total_suppressed,
                     suppressed.empty() ? "" : " (" + suppressed + ")");
  if (c[PYEBPF_TCP_CNT_LOSS_FILTERED])
    out += fmt::format(", {} not matching --loss-filter-ip", c[PYEBPF_TCP_CNT_LOSS_FILTERED]);
  if (unowned_) out += fmt::format(", {} on sockets with no known owner", unowned_);
  if (c[PYEBPF_TCP_CNT_RETRANS_FAILED])
    out += fmt::format(", {} retransmitted segments not sent (local error)", c[PYEBPF_TCP_CNT_RETRANS_FAILED]);
  out += fmt::format(", {} lost (ring buffer full)", c[PYEBPF_TCP_CNT_LOST_LOSS]);
  if (c[PYEBPF_TCP_CNT_OWNERS_FULL])
    out += fmt::format(", {} sockets not attributed (owner map full)", c[PYEBPF_TCP_CNT_OWNERS_FULL]);
  if (!session_->zero_window_hooked()) out += "; zero_window not hooked";
  if (!session_->loss_state_hooked()) out += "; loss/recovery not hooked";
  return out;
}

}  // namespace pyebpf::trackers
