// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp_accept.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pyebpf::trackers {

TcpAcceptTracker::TcpAcceptTracker(const TcpOptions& options) : TcpTrackerBase(TcpSession::Kind::Accept, options) {
  session_->on_record(TcpSession::Kind::Accept, [this](const sinks::Record& r) { handle(r); });
}

void TcpAcceptTracker::handle(const sinks::Record& r) {
  write(r);
  const auto dwell = tcp_accept_schema().accept_dwell_us;
  if (r.has(dwell)) max_dwell_us_ = std::max(max_dwell_us_, r.uint_value(dwell));
}

std::string TcpAcceptTracker::summary() const {
  return fmt::format(
      "tcp_accept: {} connections accepted, longest accept-queue wait {:.3f} ms, {} without handshake data "
      "(established before tracing), {} lost (ring buffer full){}",
      counts_.emitted, static_cast<double>(max_dwell_us_) / 1000.0, counter(PYEBPF_TCP_CNT_ACCEPT_NO_HANDSHAKE),
      counter(PYEBPF_TCP_CNT_LOST_ACCEPT),
      session_->unhooked() ? fmt::format(", {} target(s) not hooked (see the warnings)", session_->unhooked()) : "");
}

const TrackerDescriptor& tcp_accept_tracker() {
  static const TrackerDescriptor d{
      .name = "tcp_accept",
      .help = "inbound TCP connections and accept-queue dwell",
      .schemas = {&tcp_accept_schema()},
      .add_options = add_tcp_options,
      .create = [](const TrackerOptions* o) -> std::unique_ptr<Tracker> {
        return std::make_unique<TcpAcceptTracker>(static_cast<const TcpOptions&>(*o));
      },
      .report = make_tcp_accept_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
