// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trackers/tcp_session.hpp"

namespace pyebpf::trackers {

// tcp_loss: retransmits, SYN-ACK retransmits, resets sent and received,
// zero-window probes, and entries into loss/recovery, with the socket's
// congestion state and its owning thread. Rate-limited in BPF
// (--loss-rate-limit); what was suppressed is counted per event type.
class TcpLossTracker : public TcpTrackerBase {
 public:
  explicit TcpLossTracker(const TcpOptions& options);
  const char* name() const override { return "tcp_loss"; }
  void tick() override;
  std::string summary() const override;

 private:
  void handle(const sinks::Record& r);
  std::uint64_t suppressed_total() const;

  std::map<std::string, std::uint64_t, std::less<>> by_event_;  // events emitted
  std::uint64_t unowned_ = 0;
  std::uint64_t warned_suppressed_ = 0;
  std::uint64_t last_warning_ns_ = 0;
};

}  // namespace pyebpf::trackers
