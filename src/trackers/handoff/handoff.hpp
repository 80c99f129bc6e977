// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "bpf_runtime/handles.hpp"
#include "sinks/record.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"
#include "trackers/handoff/request_queue.hpp"

struct handoff_bpf;

namespace pyebpf::trackers {

// Server request queue time: one `handoff` event per connection picked up by a
// worker thread (gunicorn gthread, uwsgi-style accept handoff), and every
// --rq-interval seconds one `request_queue` summary per target process.
struct HandoffOptions : TrackerOptions {
  double min_ms = 0.0;          // pickups below this are not emitted (still counted in request_queue)
  double rq_interval_s = 10.0;  // request_queue summary period
  bool disable_request_queue = false;
};

class HandoffTracker : public BpfTracker<handoff_bpf> {
 public:
  explicit HandoffTracker(const HandoffOptions& options);
  ~HandoffTracker() override;

  const char* name() const override { return "handoff"; }
  void start(TrackerContext& ctx) override;
  void tick() override;
  void add_target(const Target& target) override;
  void remove_target(pid_t pid) override;
  std::vector<std::string> summary() const override { return {summary_line()}; }

 private:
  std::string summary_line() const;
  struct Backlog {
    std::uint64_t count = 0;
    std::uint64_t oldest_ns = 0;  // queue time of the oldest entry, 0 if none
  };
  struct PerProcess {
    HandoffTotals last;            // cumulative counters at the last summary
    std::uint64_t queued_max = 0;  // max of the per-second backlog samples this interval
    std::uint32_t container_pid = 0;
  };

  // Hooks one process (its C library's accept/epoll_ctl/recv*/read*/close);
  // throws pyebpf::Error if it cannot.
  void attach_process(pid_t pid);
  void handle(const void* data, std::size_t size) override;
  std::map<std::uint32_t, Backlog> backlog();
  std::optional<HandoffTotals> totals(std::uint32_t pid) const;
  std::uint64_t workers_since(std::uint32_t pid, std::uint64_t since_ns) const;
  void emit_request_queue(std::uint32_t pid, PerProcess& p, const Backlog& now_backlog, std::uint64_t now_ns);

  const HandoffOptions options_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;
  sinks::Record record_;
  sinks::Record summary_;  // request_queue
  std::map<std::uint32_t, PerProcess> procs_;
  std::uint64_t interval_start_ns_ = 0;
  std::uint64_t summaries_ = 0;
};

}  // namespace pyebpf::trackers
