// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bpf_runtime/handles.hpp"
#include "tcp.h"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/tcp/tcp_events.hpp"

struct tcp_bpf;

namespace pyebpf::trackers {

struct TcpOptions : TrackerOptions {
  std::string net_scope = "targets";  // "targets": sockets of the target processes; "host": all
  std::string loss_filter_ip;         // tcp_loss: only events with this address at either end
  unsigned loss_rate_limit = 1000;    // tcp_loss events per second (all CPUs), 0: unlimited
};

// The parts of the TCP tracker, each enabled by its --enable name.
struct TcpFeatures {
  bool connect = false;  // tcp_connect: outbound handshakes
  bool accept = false;   // tcp_accept: inbound connections, accept-queue dwell
  bool loss = false;     // tcp_loss: retransmits, resets, zero windows, loss/recovery
};

// One BPF object (bpf/tcp.bpf.c) for tcp_connect, tcp_accept and tcp_loss:
// they share its socket -> owner map, and its hooks run once whichever parts
// are enabled. Only the hooks the enabled parts need are loaded. One ring
// buffer carries the three kinds of events (and thread records); each
// enabled part has its own summary line.
class TcpTracker : public BpfTracker<tcp_bpf> {
 public:
  TcpTracker(const TcpOptions& options, TcpFeatures features);
  ~TcpTracker() override;

  // The enabled parts' names: "tcp_connect, tcp_loss".
  const char* name() const override { return name_.c_str(); }
  void start(TrackerContext& ctx) override;
  // Ring buffer wakeups are rate-limited in BPF (ringbuf.bpf.h): drain on the
  // tick too; and say when --loss-rate-limit suppressed events.
  void tick() override;
  std::vector<std::string> summary() const override;
  // tcp_accept's uprobes in the target (the other parts follow every
  // target's sockets from kernel hooks): a target that cannot be hooked is
  // a "tcp_accept disabled for pid N" degradation, never tcp's failure.
  void add_target(const Target& target) override;
  void remove_target(pid_t pid) override;

 private:
  void configure_hooks(bool host_scope);
  void attach_all();
  // tcp_accept: uprobes on accept4/accept in one target process; throws
  // pyebpf::Error if it cannot.
  void attach_process(pid_t pid);
  void seed_existing_sockets(const TargetLookup& targets);
  void handle(const void* data, std::size_t size) override;
  Counters counters() const;
  std::string connect_summary(const Counters& c) const;
  std::string accept_summary(const Counters& c) const;
  std::string state_hooks_skipped_note() const;
  std::string loss_summary(const Counters& c) const;

  const TcpOptions options_;
  const TcpFeatures features_;
  const std::string name_;
  std::vector<bpf::Link> links_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;
  std::optional<TcpDecoder> decoder_;
  bool zero_window_hooked_ = false;
  bool loss_state_hooked_ = false;
  // What each part emitted (and counts_).
  std::map<std::string, std::uint64_t> connect_outcomes_;
  std::uint64_t accepts_ = 0, max_dwell_us_ = 0;
  std::map<std::string, std::uint64_t, std::less<>> losses_;  // by event name
  std::uint64_t unowned_losses_ = 0;
  std::uint64_t warned_suppressed_ = 0, last_warning_ns_ = 0;
};

}  // namespace pyebpf::trackers
