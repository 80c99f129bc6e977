// SPDX-License-Identifier: Apache-2.0
#include "trackers/gc_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gc.h"
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

void GcTotals::add(const pyebpf_gc_stats& cpu, std::uint32_t epoch) {
  count += cpu.count;
  timed += cpu.timed;
  total_ns += cpu.total_ns;
  collected += cpu.collected;
  uncollectable += cpu.uncollectable;
  if (cpu.max_epoch[epoch & 1] == epoch) max_ns = std::max<std::uint64_t>(max_ns, cpu.max_ns[epoch & 1]);
  add_buckets(hist, cpu.hist);
}

GcTotals GcTotals::since(const GcTotals& earlier) const {
  GcTotals d = *this;
  d.count -= earlier.count;
  d.timed -= earlier.timed;
  d.total_ns -= earlier.total_ns;
  d.collected -= earlier.collected;
  d.uncollectable -= earlier.uncollectable;
  for (std::size_t i = 0; i < hist.size(); ++i) d.hist[i] -= earlier.hist[i];
  return d;
}

namespace {

// A percentile from the histogram, within the bucket's bounds and never above
// the longest pause, which is exact.
double quantile_ms(const LatencyHistogram& hist, double q, double max_ms) {
  return std::min(round_ms(histogram_quantile_us(hist, q) / 1000.0), max_ms);
}

nlohmann::ordered_json histogram_json(const LatencyHistogram& hist) {
  auto out = nlohmann::ordered_json::array();
  for (std::uint32_t b = 0; b < hist.size(); ++b) {
    if (!hist[b]) continue;
    BucketRange r = latency_bucket_range(b);
    out.push_back({static_cast<std::uint64_t>(r.low_us), static_cast<std::uint64_t>(r.high_us), hist[b]});
  }
  return out;
}

// The inverse of histogram_json; entries that name no bucket are ignored
// (a stored file is input like any other).
void add_histogram_json(const nlohmann::ordered_json& json, LatencyHistogram& hist) {
  if (!json.is_array()) return;
  for (const auto& entry : json) {
    if (!entry.is_array() || entry.size() != 3 || !entry[0].is_number() || !entry[2].is_number_integer() ||
        entry[2].get<std::int64_t>() < 0)
      continue;
    const double low = entry[0].get<double>();
    if (!(low >= 0 && low < 1e12)) continue;
    std::uint32_t b = pyebpf_latency_bucket(static_cast<std::uint64_t>(low));
    if (latency_bucket_range(b).low_us == low) hist[b] += entry[2].get<std::uint64_t>();
  }
}

}  // namespace

void fill_gc_stats(const GcTotals& d, int generation, double interval_s, sinks::Record& r) {
  const GcStatsSchema& s = gc_stats_schema();
  const double max_ms = ns_to_ms(d.max_ns);
  r.set_float(s.interval_s, round_ms(interval_s));
  if (generation >= 0 && generation < PYEBPF_GC_GENERATIONS) r.set_uint(s.generation, generation);
  r.set_uint(s.count, d.count);
  r.set_float(s.total_ms, ns_to_ms(d.total_ns));
  r.set_float(s.p50_ms, quantile_ms(d.hist, 0.5, max_ms));
  r.set_float(s.p99_ms, quantile_ms(d.hist, 0.99, max_ms));
  r.set_float(s.max_ms, max_ms);
  r.set_int(s.collected, d.collected);
  r.set_int(s.uncollectable, d.uncollectable);
  r.set_json(s.histogram, histogram_json(d.hist));
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

// GC pauses by generation: count, total, p50/p99/max. From gc_stats records,
// which count every collection; from gc_pause events only in a stored run
// that has no gc_stats (pyebpf before gc_stats existed).
class GcSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    if (&r.schema() == &gc_stats_schema()) {
      add_stats(r);
      return;
    }
    const GcPauseSchema& s = gc_pause_schema();
    double d = r.number(s.duration_ms).value_or(0);
    pauses_by_generation_[static_cast<long>(r.number(s.generation).value_or(-1))].add(d);
    all_pauses_.add(d);
  }

  void render(std::string& out) const override {
    if (!stats_by_generation_.empty()) {
      render_stats(out);
      return;
    }
    if (all_pauses_.count() == 0) return;
    heading(out, fmt::format("GC pauses by generation  [gc_pause: {} collections, {} ms]", all_pauses_.count(),
                             ms(all_pauses_.total())));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const std::string& name, const Distribution& d) {
      rows.push_back(
          {name, count_text(d.count()), ms(d.total()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    };
    for (const auto& [gen, d] : pauses_by_generation_) row(gen < 0 ? "?" : std::to_string(gen), d);
    if (pauses_by_generation_.size() > 1) row("all", all_pauses_);
    table(out, columns(), rows);
  }

 private:
  struct Stats {
    std::uint64_t count = 0;
    double total_ms = 0;
    double max_ms = 0;
    LatencyHistogram hist{};

    void add(const Stats& other) {
      count += other.count;
      total_ms += other.total_ms;
      max_ms = std::max(max_ms, other.max_ms);
      add_buckets(hist, other.hist);
    }
  };

  static std::vector<Col> columns() {
    return {{"gen", 4, true},    {"count", 8, true},  {"total ms", 11, true},
            {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}};
  }

  void add_stats(const sinks::Record& r) {
    const GcStatsSchema& s = gc_stats_schema();
    Stats one;
    one.count = static_cast<std::uint64_t>(r.number(s.count).value_or(0));
    one.total_ms = r.number(s.total_ms).value_or(0);
    one.max_ms = r.number(s.max_ms).value_or(0);
    if (r.kind(s.histogram) == sinks::Record::Kind::Json) add_histogram_json(r.json(s.histogram), one.hist);
    stats_by_generation_[static_cast<long>(r.number(s.generation).value_or(-1))].add(one);
  }

  void render_stats(std::string& out) const {
    Stats all;
    for (const auto& [gen, st] : stats_by_generation_) all.add(st);
    heading(out,
            fmt::format("GC pauses by generation  [gc_stats: {} collections, {} ms]", all.count, ms(all.total_ms)));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const std::string& name, const Stats& st) {
      rows.push_back({name, count_text(st.count), ms(st.total_ms), ms(quantile_ms(st.hist, 0.5, st.max_ms)),
                      ms(quantile_ms(st.hist, 0.99, st.max_ms)), ms(st.max_ms)});
    };
    for (const auto& [gen, st] : stats_by_generation_) row(gen < 0 ? "?" : std::to_string(gen), st);
    if (stats_by_generation_.size() > 1) row("all", all);
    table(out, columns(), rows);
  }

  std::map<long, Stats> stats_by_generation_;
  std::map<long, Distribution> pauses_by_generation_;
  Distribution all_pauses_;
};

}  // namespace

std::unique_ptr<sinks::ReportSection> make_gc_report() {
  return std::make_unique<GcSection>();
}

}  // namespace pyebpf::trackers
