// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_loss.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "trackers/tcp_format.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

constexpr std::uint64_t kWarnEveryNs = 10'000'000'000;

}  // namespace

TcpLossTracker::TcpLossTracker(const TcpOptions& options) : TcpTrackerBase(TcpSession::Kind::Loss, options) {
  session_->on_record(TcpSession::Kind::Loss, [this](const sinks::Record& r) { handle(r); });
}

void TcpLossTracker::handle(const sinks::Record& r) {
  const TcpLossSchema& s = tcp_loss_schema();
  write(r);
  ++by_event_[std::string(r.text(s.event))];
  if (!r.bool_value(s.owner_known)) ++unowned_;
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
                 options_.loss_rate_limit, suppressed - warned_suppressed_);
    warned_suppressed_ = suppressed;
    last_warning_ns_ = now;
  }
}

std::string TcpLossTracker::summary() const {
  auto c = session_->counters();
  std::vector<std::string> kinds, suppressed;
  std::uint64_t total = 0, total_suppressed = 0;
  for (int t = 0; t < PYEBPF_LOSS_TYPES; ++t) {
    auto it = by_event_.find(tcp::loss_event_name(t));
    const std::uint64_t n = it == by_event_.end() ? 0 : it->second;
    total += n;
    if (n) kinds.push_back(fmt::format("{} {}", n, tcp::loss_event_name(t)));
    std::uint64_t s = c[PYEBPF_TCP_CNT_SUPPRESSED + t];
    total_suppressed += s;
    if (s) suppressed.push_back(fmt::format("{} {}", s, tcp::loss_event_name(t)));
  }
  std::string out = fmt::format("tcp_loss: {} events ({})", total,
                                kinds.empty() ? "none" : fmt::format("{}", fmt::join(kinds, ", ")));
  out += fmt::format(", {} suppressed by --loss-rate-limit{}", total_suppressed,
                     suppressed.empty() ? "" : fmt::format(" ({})", fmt::join(suppressed, ", ")));
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

const TrackerDescriptor& tcp_loss_tracker() {
  static const TrackerDescriptor d{
      .name = "tcp_loss",
      .help = "retransmits, resets, zero windows",
      .schemas = {&tcp_loss_schema()},
      .add_options = add_tcp_options,
      .create = [](const TrackerOptions* o) -> std::unique_ptr<Tracker> {
        return std::make_unique<TcpLossTracker>(static_cast<const TcpOptions&>(*o));
      },
      .report = make_tcp_loss_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
