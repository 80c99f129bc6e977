// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_connect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pyebpf::trackers {

TcpConnectTracker::TcpConnectTracker(const TcpOptions& options) : TcpTrackerBase(TcpSession::Kind::Connect, options) {
  session_->on_record(TcpSession::Kind::Connect, [this](const sinks::Record& r) { handle(r); });
}

void TcpConnectTracker::handle(const sinks::Record& r) {
  write(r);
  ++outcomes_[std::string(r.text(tcp_connect_schema().outcome))];
}

std::string TcpConnectTracker::summary() const {
  std::vector<std::string> by_outcome;
  for (const auto& [outcome, n] : outcomes_) by_outcome.push_back(fmt::format("{} {}", n, outcome));
  return fmt::format("tcp_connect: {} handshakes reported ({}), {} lost (ring buffer full)", counts_.emitted,
                     by_outcome.empty() ? "none" : fmt::format("{}", fmt::join(by_outcome, ", ")),
                     counter(PYEBPF_TCP_CNT_LOST_CONNECT));
}

const TrackerDescriptor& tcp_connect_tracker() {
  static const TrackerDescriptor d{
      .name = "tcp_connect",
      .help = "outbound TCP handshakes",
      .schemas = {&tcp_connect_schema()},
      .add_options = add_tcp_options,
      .create = [](const TrackerOptions* o) -> std::unique_ptr<Tracker> {
        return std::make_unique<TcpConnectTracker>(static_cast<const TcpOptions&>(*o));
      },
      .report = make_tcp_connect_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
