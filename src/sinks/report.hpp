// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// Durations (or any values) of one series, for count/total/percentiles. Keeps
// every value up to `capacity` of them, then a uniform sample of that many
// (deterministic: the same events in the same order give the same numbers).
// Count, total and max stay exact.
class Distribution {
 public:
  explicit Distribution(std::size_t capacity = 100'000) : capacity_(capacity) {}
  void add(double value);
  std::uint64_t count() const { return count_; }
  double total() const { return total_; }
  double max() const { return max_; }
  // Nearest-rank percentile, q in (0, 1]. 0 if empty.
  double percentile(double q) const;

 private:
  std::size_t capacity_;
  std::vector<double> values_;
  mutable bool sorted_ = true;
  std::uint64_t count_ = 0;
  double total_ = 0;
  double max_ = 0;
  std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
};

// The end-of-run report, built from events alone (by metric and field names),
// so a tracker's section appears as soon as its events exist, live or from a
// stored file (`pyebpf report`). Plain-text tables no wider than 100 columns.
//
// Sections: CPU (py_stack: top stacks and functions by share of samples,
// threads), GIL (gil_wait: holders by the wait they caused and who waited),
// GC (gc_pause by generation: count, total, p50/p99/max), off-CPU (off_cpu:
// top reasons by time), TCP (tcp_connect/tcp_accept latency p50/p99, tcp_loss
// counts), handoff (p50/p99), host network health (warnings), other metrics.
// The counts of lost and dropped events are the end-of-run summary lines,
// printed just before the report.
class Report {
 public:
  static constexpr std::size_t kWidth = 100;
  static constexpr std::size_t kTop = 10;

  void add(const Event& event);
  std::uint64_t events() const { return events_; }
  std::string render() const;

 private:
  struct Counted {
    std::uint64_t count = 0;
    std::map<std::string, std::uint64_t> threads;
  };
  struct Timed {
    double ms = 0;
    std::uint64_t count = 0;
    double max_ms = 0;
    std::map<std::string, double> threads;  // thread -> ms
  };
  void render_cpu(std::string& out) const;
  void render_gil(std::string& out) const;
  void render_gc(std::string& out) const;
  void render_off_cpu(std::string& out) const;
  void render_tcp(std::string& out) const;
  void render_handoff(std::string& out) const;
  void render_host_net(std::string& out) const;

  std::uint64_t events_ = 0;
  std::map<std::string, std::uint64_t> per_metric_;

  // py_stack
  std::map<std::string, Counted> stacks_;       // stack -> samples, by thread
  std::map<std::string, std::uint64_t> self_;   // "func (file)" -> samples on top
  std::map<std::string, std::uint64_t> total_;  // "func (file)" -> samples anywhere
  std::map<std::string, std::uint64_t> cpu_threads_;
  std::uint64_t samples_ = 0;
  bool stacks_capped_ = false;
  // gil_wait: (holder thread, holder leaf) -> wait caused, by waiting thread
  std::map<std::pair<std::string, std::string>, Timed> gil_;
  Distribution gil_waits_;
  // gc_pause
  std::map<long, Distribution> gc_;
  Distribution gc_all_;
  // off_cpu: (state, kernel wait, thread, python leaf)
  struct OffCpuKey {
    std::string state, kernel, thread, python;
    bool operator<(const OffCpuKey& o) const {
      return std::tie(state, kernel, thread, python) < std::tie(o.state, o.kernel, o.thread, o.python);
    }
  };
  std::map<OffCpuKey, Timed> off_cpu_;
  double off_cpu_ms_ = 0, runq_ms_ = 0;
  std::uint64_t off_cpu_count_ = 0;
  // tcp
  std::map<std::string, Distribution> connect_;  // outcome -> handshake ms
  Distribution accept_dwell_, accept_rtt_;
  std::uint64_t accept_queue_full_ = 0;
  std::map<std::string, std::uint64_t> loss_events_;
  std::map<std::string, std::uint64_t> loss_peers_;
  // handoff, and its request_queue summaries
  Distribution handoff_;
  std::uint64_t rq_summaries_ = 0, rq_picked_up_ = 0, rq_cancelled_ = 0;
  double rq_queued_max_ = 0, rq_oldest_ms_ = 0, rq_threads_max_ = 0;
  std::map<std::string, Distribution> handoff_by_worker_;
  // host_net_health
  std::uint64_t snapshots_ = 0;
  std::map<std::string, std::uint64_t> warnings_;
  Event last_snapshot_;
};

// Feeds every event into a Report (live runs).
class ReportSink : public Sink {
 public:
  void write(const Event& event) override { report.add(event); }
  Report report;
};

// The lines pyebpf prints at the end of a run and `pyebpf report` prints for
// a stored run: "ran N s (why)", the summary lines, then the report.
std::string end_of_run_text(double duration_s, const std::string& stop_reason,
                            const std::vector<std::string>& summary_lines, const Report* report);

}  // namespace pyebpf::sinks
