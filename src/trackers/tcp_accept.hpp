// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

#include "trackers/tcp_session.hpp"

namespace pyebpf::trackers {

// tcp_accept: one event per inbound connection accepted by a target process:
// how long it waited in the accept queue (handshake complete -> accept()
// returned), the listener's queues at that moment, the handshake's duration.
class TcpAcceptTracker : public TcpTrackerBase {
 public:
  explicit TcpAcceptTracker(const TcpOptions& options);
  const char* name() const override { return "tcp_accept"; }
  std::string summary() const override;

 private:
  void handle(const sinks::Record& r);
  std::uint64_t max_dwell_us_ = 0;
};

}  // namespace pyebpf::trackers
