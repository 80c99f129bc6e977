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
    const AddedPyStack added = add_python_stack(r, s.py_stack, *frames, ev.stack, size - PYEBPF_GC_EVENT_FIXED);
    r.set_uint(s.py_stack_depth, added.depth);
    if (ev.stack.truncated) r.set_bool(s.py_stack_truncated, true);
    if (added.partial) r.set_bool(s.py_stack_partial, true);
  }
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

// GC pauses by generation: count, total, p50/p99/max.
class GcSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const GcPauseSchema& s = gc_pause_schema();
    double d = r.number(s.duration_ms).value_or(0);
    by_generation_[static_cast<long>(r.number(s.generation).value_or(-1))].add(d);
    all_.add(d);
  }

  void render(std::string& out) const override {
    if (all_.count() == 0) return;
    heading(out,
            fmt::format("GC pauses by generation  [gc_pause: {} collections, {} ms]", all_.count(), ms(all_.total())));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const std::string& name, const Distribution& d) {
      rows.push_back(
          {name, count_text(d.count()), ms(d.total()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    };
    for (const auto& [gen, d] : by_generation_) row(gen < 0 ? "?" : std::to_string(gen), d);
    if (by_generation_.size() > 1) row("all", all_);
    table(out,
          {{"gen", 4, true},
           {"count", 8, true},
           {"total ms", 11, true},
           {"p50 ms", 9, true},
           {"p99 ms", 9, true},
           {"max ms", 9, true}},
          rows);
  }

 private:
  std::map<long, Distribution> by_generation_;
  Distribution all_;
};

}  // namespace

std::unique_ptr<sinks::ReportSection> make_gc_report() {
  return std::make_unique<GcSection>();
}

}  // namespace pyebpf::trackers
