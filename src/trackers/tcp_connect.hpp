// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trackers/tcp_session.hpp"

namespace pyebpf::trackers {

// tcp_connect: one event per outbound TCP handshake of a target process
// (SYN_SENT -> ESTABLISHED or CLOSE), with its duration, RTT and outcome.
class TcpConnectTracker : public TcpTrackerBase {
 public:
  explicit TcpConnectTracker(const TcpOptions& options);
  const char* name() const override { return "tcp_connect"; }
  std::string summary() const override;

 private:
  void handle(const sinks::Record& r);
  std::map<std::string, std::uint64_t> outcomes_;
};

}  // namespace pyebpf::trackers
