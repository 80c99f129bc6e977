// SPDX-License-Identifier: Apache-2.0
#include "trackers/gc/gc_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gc.h"
#include "live/tally.hpp"
#include "sinks/report_text.hpp"

namespace pyebpf::trackers {

const GcPauseSchema& gc_pause_schema() {
  static const GcPauseSchema schema;
  return schema;
}

const GcStatsSchema& gc_stats_schema() {
  static const GcStatsSchema schema;
  return schema;
}

const GcCpuSchema& gc_cpu_schema() {
  static const GcCpuSchema schema;
  return schema;
}

void GcTotals::add(const pyebpf_gc_stats& cpu, std::uint32_t epoch) {
  count += cpu.count;
  collected += cpu.collected;
  uncollectable += cpu.uncollectable;
  pauses.add(cpu.pauses, epoch);
}

GcTotals GcTotals::since(const GcTotals& earlier) const {
  return {count - earlier.count, collected - earlier.collected, uncollectable - earlier.uncollectable,
          pauses.since(earlier.pauses)};
}

void GcTotals::merge(const GcTotals& other) {
  count += other.count;
  collected += other.collected;
  uncollectable += other.uncollectable;
  pauses.merge(other.pauses);
}

void fill_gc_stats(const GcTotals& d, std::uint64_t timed, std::optional<double> duration_ms, int generation,
                   double interval_s, sinks::Record& r) {
  const GcStatsSchema& s = gc_stats_schema();
  r.set_float(s.interval_s, round_ms(interval_s));
  if (generation >= 0 && generation < PYEBPF_GC_GENERATIONS) r.set_uint(s.generation, generation);
  r.set_uint(s.count, d.count);
  r.set_uint(s.timed, timed);
  if (duration_ms)
    r.set_float(s.total_ms, round_ms(*duration_ms));
  else if (timed)
    r.set_float(s.total_ms, ns_to_ms(d.pauses.total_ns));
  if (timed) {
    r.set_float(s.p50_ms, d.pauses.quantile_ms(0.5));
    r.set_float(s.p99_ms, d.pauses.quantile_ms(0.99));
    r.set_float(s.max_ms, ns_to_ms(d.pauses.max_ns));
  }
  r.set_int(s.collected, d.collected);
  r.set_int(s.uncollectable, d.uncollectable);
  r.set_json(s.histogram, histogram_json(d.pauses.hist));
}

void fill_gc_cpu(std::uint64_t samples, std::uint64_t gc_samples, unsigned sample_hz, double interval_s,
                 sinks::Record& r) {
  const GcCpuSchema& s = gc_cpu_schema();
  r.set_float(s.interval_s, round_ms(interval_s));
  r.set_uint(s.samples, samples);
  r.set_uint(s.gc_samples, gc_samples);
  r.set_float(s.gc_percent,
              samples ? round_ms(100.0 * static_cast<double>(gc_samples) / static_cast<double>(samples)) : 0.0);
  r.set_float(s.gc_cpu_ms, round_ms(1e3 * static_cast<double>(gc_samples) / sample_hz));
}

Decoded decode_gc_pause(const void* data, std::size_t size, const DecodeContext& ctx, bool py_stack, sinks::Record& r) {
  const GcPauseSchema& s = gc_pause_schema();
  if (size < PYEBPF_GC_EVENT_BYTES(0)) return Decoded::Malformed;
  pyebpf_gc_event ev{};
  std::memcpy(&ev, data, std::min(size, sizeof(ev)));
  auto* frames = ctx.targets.frames(static_cast<pid_t>(ev.hdr.pid));
  if (!frames) return Decoded::Skipped;  // target already gone and forgotten

  r.clear();
  set_thread_fields(r, ctx, ev.hdr);
  r.set_time(s.start_time, ctx.clock.epoch_us(ev.hdr.ts_ns));
  r.set_time(s.end_time, ctx.clock.epoch_us(ev.end_ns));
  r.set_float(s.duration_ms, ns_to_ms(ev.end_ns - ev.hdr.ts_ns));
  if (ev.generation >= 0) r.set_int(s.generation, ev.generation);
  if (!(ev.flags & PYEBPF_GC_F_NO_STATS)) {
    r.set_int(s.collected, ev.collected);
    r.set_int(s.uncollectable, ev.uncollectable);
  }
  if (ev.flags & PYEBPF_GC_F_NESTED) r.set_bool(s.nested, true);
  if (py_stack) {
    add_python_stack(r, s.py, *frames, ev.stack, size - PYEBPF_GC_EVENT_FIXED);
    if (ev.stack.truncated) r.set_bool(s.py_stack_truncated, true);
  }
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

// GC by generation from gc_stats records, which count every collection:
// count, timed, total, p50/p99/max of the timed; GC's share of the CPU from
// gc_cpu records.
class GcSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    if (&r.schema() == &gc_stats_schema()) {
      add_stats(r);
    } else if (&r.schema() == &gc_cpu_schema()) {
      const GcCpuSchema& s = gc_cpu_schema();
      samples_ += static_cast<std::uint64_t>(r.number(s.samples).value_or(0));
      gc_samples_ += static_cast<std::uint64_t>(r.number(s.gc_samples).value_or(0));
      gc_cpu_ms_ += r.number(s.gc_cpu_ms).value_or(0);
    }
  }

  void render(std::string& out) const override {
    if (!stats_by_generation_.empty() || samples_) render_stats(out);
  }

 private:
  // One generation's records: every collection, and the latency of those
  // timed one by one (a record's `timed` of its `count`).
  struct Generation {
    std::uint64_t count = 0;
    double total_ms = 0;  // of the records that have it
    RecordedLatency timed;

    void merge(const Generation& other) {
      count += other.count;
      total_ms += other.total_ms;
      timed.merge(other.timed);
    }
  };

  void add_stats(const sinks::Record& r) {
    const GcStatsSchema& s = gc_stats_schema();
    Generation one;
    one.count = static_cast<std::uint64_t>(r.number(s.count).value_or(0));
    one.total_ms = r.number(s.total_ms).value_or(0);
    one.timed = recorded_latency(r, s.timed, s.total_ms, s.max_ms, s.histogram);
    stats_by_generation_[static_cast<long>(r.number(s.generation).value_or(-1))].merge(one);
  }

  void render_stats(std::string& out) const {
    Generation all;
    for (const auto& [gen, st] : stats_by_generation_) all.merge(st);
    heading(out, fmt::format("GC by generation  [gc_stats: {} collections, {} timed one by one]", all.count,
                             all.timed.count));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const std::string& name, const Generation& st) {
      const bool timed = st.timed.count > 0;
      rows.push_back({name, count_text(st.count), count_text(st.timed.count), st.total_ms > 0 ? ms(st.total_ms) : "-",
                      timed ? ms(st.timed.quantile_ms(0.5)) : "-", timed ? ms(st.timed.quantile_ms(0.99)) : "-",
                      timed ? ms(st.timed.max_ms) : "-"});
    };
    for (const auto& [gen, st] : stats_by_generation_) row(gen < 0 ? "?" : std::to_string(gen), st);
    if (stats_by_generation_.size() > 1) row("all", all);
    if (!rows.empty())
      table(out,
            {{"gen", 4, true},
             {"count", 8, true},
             {"timed", 8, true},
             {"total ms", 11, true},
             {"p50 ms", 9, true},
             {"p99 ms", 9, true},
             {"max ms", 9, true}},
            rows);
    if (samples_)
      out += fmt::format("  GC's share of the targets' CPU: {:.1f} % ({} of {} samples, ~{} ms)\n",
                         100.0 * static_cast<double>(gc_samples_) / static_cast<double>(samples_), gc_samples_,
                         samples_, ms(gc_cpu_ms_));
  }

  std::map<long, Generation> stats_by_generation_;
  std::uint64_t samples_ = 0, gc_samples_ = 0;
  double gc_cpu_ms_ = 0;
};

}  // namespace

void gc_top(const sinks::Record& r, live::Tally& tally) {
  const GcPauseSchema& s = gc_pause_schema();
  const auto ms = &r.schema() == &s ? r.number(s.duration_ms) : std::nullopt;
  if (!ms) return;
  tally.wait(r, "GC", *ms, r.has(s.generation) ? fmt::format("gen {}", r.uint_value(s.generation)) : "");
  tally.pause("GC pauses", *ms);
}

std::unique_ptr<sinks::ReportSection> make_gc_report() {
  return std::make_unique<GcSection>();
}

}  // namespace pyebpf::trackers
