// SPDX-License-Identifier: Apache-2.0
#include "trackers/offcpu/offcpu_blocked.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "dump/deadlocks.hpp"
#include "dump/waits.hpp"
#include "pyebpf/error.hpp"
#include "sinks/report_text.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

using namespace sinks::report;

constexpr double kMinPeriodS = 0.5;      // looks no more often than this
constexpr std::size_t kMaxEndRows = 40;  // threads listed in the report

// Threads still blocked at the end of the run, longest first.
class BlockedSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const OffCpuBlockedSchema& s = off_cpu_blocked_schema();
    if (r.text(s.reported) != "end") return;
    const std::size_t depth = r.kind(s.py_stack) == sinks::Record::Kind::PyStack ? r.size(s.py_stack) : 0;
    const auto tid = static_cast<pid_t>(r.uint_value(sinks::thread_fields::tid));
    rows_.push_back({r.number(s.state_ms).value_or(0), std::string(thread_of(r)), field_text(r, s.state, "-"),
                     field_text(r, s.wait, "-"), depth ? short_frame(r.py_frame(s.py_stack, depth - 1)) : "-"});
    names_[tid] = fmt::format("{} ({})", thread_of(r), tid);
    if (r.kind(s.deadlock) == sinks::Record::Kind::Json) {
      auto cycle = r.json(s.deadlock).get<std::vector<pid_t>>();
      if (!cycle.empty()) deadlocks_.insert(dump::canonical_cycle(std::move(cycle)));
    }
  }

  void render(std::string& out) const override {
    if (rows_.empty()) return;
    auto sorted = rows_;
    std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
    heading(out, fmt::format("Blocked now: threads off CPU when the run ended  [off_cpu_blocked: {} threads]",
                             rows_.size()));
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> waits;
    for (std::size_t i = 0; i < std::min(sorted.size(), kMaxEndRows); ++i) {
      const Row& row = sorted[i];
      rows.push_back({dump::human_duration(row.ms), row.state, row.thread, row.python});
      waits.push_back(row.wait);
    }
    // What each waits for goes under its row, where it has the most room.
    table(out, {{"for", 9, true}, {"state", 15}, {"thread", 24}, {"python (leaf) / waiting for", 0}}, rows, waits);
    if (sorted.size() > kMaxEndRows) out += fmt::format("  ... and {} more\n", sorted.size() - kMaxEndRows);
    for (const auto& cycle : deadlocks_) {
      std::string line = "  DEADLOCK:";
      for (pid_t tid : cycle) line += " " + name_of(tid) + " waits for";
      out += line + " " + name_of(cycle.front()) + "\n";
    }
  }

 private:
  struct Row {
    double ms = 0;
    std::string thread, state, wait, python;
  };
  std::string name_of(pid_t tid) const {
    auto it = names_.find(tid);
    return it == names_.end() ? fmt::format("tid {}", tid) : it->second;
  }

  std::vector<Row> rows_;
  std::map<pid_t, std::string> names_;      // "Deadlock-A (1234)"
  std::set<std::vector<pid_t>> deadlocks_;  // canonical_cycle()s
};

}  // namespace

const OffCpuBlockedSchema& off_cpu_blocked_schema() {
  static const OffCpuBlockedSchema schema;
  return schema;
}

std::unique_ptr<sinks::ReportSection> make_blocked_report() {
  return std::make_unique<BlockedSection>();
}

BlockedThreads::BlockedThreads(double after_s, double end_min_ms)
    : after_s_(after_s), end_min_ms_(end_min_ms), record_(off_cpu_blocked_schema()) {}
BlockedThreads::~BlockedThreads() = default;

void BlockedThreads::start(TrackerContext& ctx) {
  try {
    reader_ = std::make_unique<dump::ThreadReader>(ctx.shared_maps);
  } catch (const Error& e) {
    unavailable_ = e.what();
    ctx.degraded.add("offcpu", 0, std::string("threads blocked now are not reported: ") + e.what(), e.hint());
  }
}

bool BlockedThreads::ready(const native::Kallsyms& kallsyms) {
  if (!dumper_ && reader_) dumper_ = std::make_unique<dump::Dumper>(std::move(reader_), kallsyms);
  return dumper_ != nullptr;
}

void BlockedThreads::tick(TrackerContext& ctx, const native::Kallsyms& kallsyms) {
  const std::uint64_t now = monotonic_ns();
  if (now < next_check_ns_ || !ready(kallsyms)) return;
  next_check_ns_ = now + static_cast<std::uint64_t>(std::max(after_s_ / 2, kMinPeriodS) * 1e9);
  report(ctx, static_cast<std::uint64_t>(after_s_ * 1e9), "threshold");
}

void BlockedThreads::finish(TrackerContext& ctx, const native::Kallsyms& kallsyms) {
  if (!ready(kallsyms)) return;
  report(ctx, static_cast<std::uint64_t>(std::llround(end_min_ms_ * 1e6)), "end");
}

void BlockedThreads::report(TrackerContext& ctx, std::uint64_t min_ns, const char* why) {
  std::vector<const Target*> live;
  for (const auto& t : ctx.targets.all())
    if (!t.exited && t.python) live.push_back(&t);
  if (live.empty()) return;
  const bool at_end = std::string_view(why) == "end";
  std::vector<dump::DumpedProcess> processes;
  try {
    processes = dumper_->dump(live, std::max<std::uint64_t>(min_ns, 1));
  } catch (const Error& e) {
    spdlog::warn("offcpu: threads blocked now could not be read: {}", e.what());
    return;
  }
  // A thread not blocked long enough now has ended the wait reported: only
  // this pass's threads are kept (so the map does not grow with thread churn).
  std::map<pid_t, std::uint64_t> blocked_now;
  for (const auto& p : processes) {
    for (const auto& problem : p.problems) spdlog::debug("offcpu: blocked threads of pid {}: {}", p.pid, problem);
    for (const auto& t : p.threads) {
      const pid_t tid = static_cast<pid_t>(t.raw.hdr.tid);
      const std::uint64_t switches = t.raw.voluntary_switches + t.raw.involuntary_switches;
      if (!at_end) {
        blocked_now[tid] = switches;
        auto seen = reported_waits_.find(tid);
        if (seen != reported_waits_.end() && seen->second == switches) continue;  // this wait was reported already
      }
      dump::fill_record(record_, p, t, ctx.env, ctx.clock);
      record_.set_text(off_cpu_blocked_schema().reported, why);
      deliver(Decoded::Event, record_, ctx, counts_);
      ++(at_end ? at_end_ : during_);
    }
  }
  if (!at_end) reported_waits_ = std::move(blocked_now);
}

std::string BlockedThreads::summary() const {
  if (!unavailable_.empty()) return "threads blocked now not reported (" + unavailable_ + ")";
  return fmt::format("{} waits reported while in progress (blocked {} s or more), {} threads blocked at the end",
                     during_, after_s_, at_end_);
}

}  // namespace pyebpf::trackers
