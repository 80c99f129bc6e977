// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "trackers/tcp_session.hpp"

namespace pyebpf::trackers {

// tcp_loss: retransmits, SYN-ACK retransmits, resets sent and received,
// zero-window probes, and entries into loss/recovery, with the socket's
// congestion state and its owning thread. Rate-limited in BPF
// (--loss-rate-limit); what was suppressed is counted per event type.
class TcpLossTracker : public TcpTrackerBase {
 public:
  TcpLossTracker();
  const char* name() const override { return "tcp_loss"; }
  void tick() override;
  std::string summary() const override;

 private:
  void handle(const pyebpf_tcp_loss_event& ev);
  std::uint64_t suppressed_total() const;

  std::array<std::uint64_t, PYEBPF_LOSS_TYPES> emitted_{};
  std::uint64_t unowned_ = 0;
  std::uint64_t warned_suppressed_ = 0;
  std::uint64_t last_warning_ns_ = 0;
};

}  // namespace pyebpf::trackers
