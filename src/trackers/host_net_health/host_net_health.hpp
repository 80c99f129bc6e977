// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "net/proc_net.hpp"
#include "pyebpf/fd.hpp"
#include "sinks/record.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/host_net_health/net_health_report.hpp"

namespace pyebpf::trackers {

// host_net_health: every --hnh-interval seconds (the first snapshot right
// after start) one `host_net_health` document per network namespace: TCP
// state counts from sock_diag, TIME_WAIT and ephemeral-port pressure per
// destination, interface and ENA allowance counters (SIOCETHTOOL), conntrack
// usage, per-process fd usage, and warnings. No BPF: user space only.
//
// Namespaces (--hnh-netns): "target" reports the network namespace of each
// target (containers have their own; targets sharing one give one document),
// "self" reports pyebpf's own. Reading another namespace happens on a helper
// thread that setns()es into it; the runner's thread never changes namespace.
struct HostNetHealthOptions : TrackerOptions {
  unsigned interval_s = 30;
  std::string interface;  // empty: the default route's interface
  std::string procs = "nginx,gunicorn";
  std::string netns = "target";  // "target": each target's network namespace; "self": pyebpf's own
  hnh::Thresholds thresholds;    // warnings (strict >), the original tool's values
};

class HostNetHealthTracker : public Tracker {
 public:
  explicit HostNetHealthTracker(const HostNetHealthOptions& options);
  ~HostNetHealthTracker() override;

  const char* name() const override { return "host_net_health"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override { return {}; }
  void consume() override {}
  void tick() override;
  std::vector<std::string> summary() const override { return {summary_line()}; }

  // What one collection read in one namespace (filled on the helper thread).
  struct Reading {
    std::string error;  // non-empty: nothing else is valid
    std::uint64_t ts_ns = 0;
    std::string interface;
    std::optional<std::string> driver;
    std::optional<net::InterfaceCounters> counters;
    hnh::EnaCounters ena;
    net::PortRange ports;
    std::vector<net::TcpSocket> sockets;
    std::int64_t conntrack_count = -1, conntrack_max = -1;
    std::vector<hnh::FdUsage> fds;
  };

 private:
  std::string summary_line() const;
  struct View {
    std::uint64_t netns = 0;  // inode of the namespace
    Fd nsfd;                  // keeps the namespace reachable; -1 for pyebpf's own
    std::vector<pid_t> pids;  // targets in it (empty in --hnh-netns self)
    pid_t label_pid = 0;
    // previous reading, for deltas
    std::uint64_t prev_ts_ns = 0;
    std::string prev_interface;
    std::optional<net::InterfaceCounters> prev_counters;
    hnh::EnaCounters prev_ena;
    bool warned = false;
  };
  struct Round {
    std::vector<Reading> readings;  // one per view, same order
  };

  Round collect(bool counters_only) const;
  void emit(View& view, const Reading& r);
  bool view_alive(const View& v) const;

  const HostNetHealthOptions options_;
  TrackerContext* ctx_ = nullptr;
  std::vector<View> views_;
  std::vector<std::string> procs_;
  sinks::Record record_;
  std::future<Round> pending_;
  std::uint64_t next_due_ns_ = 0;
  std::uint64_t snapshots_ = 0;
  std::uint64_t failures_ = 0;
};

}  // namespace pyebpf::trackers
