// SPDX-License-Identifier: Apache-2.0
#include "trackers/gil/gil_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "live/tally.hpp"
#include "sinks/report_text.hpp"
#include "util/files.hpp"

namespace pyebpf::trackers {

const GilWaitSchema& gil_wait_schema() {
  static const GilWaitSchema schema;
  return schema;
}

const GilStatsSchema& gil_stats_schema() {
  static const GilStatsSchema schema;
  return schema;
}

void GilTotals::add(const pyebpf_gil_stats& cpu, std::uint32_t epoch) {
  reported += cpu.reported;
  waits.add(cpu.waits, epoch);
}

GilTotals GilTotals::since(const GilTotals& earlier) const {
  return {reported - earlier.reported, waits.since(earlier.waits)};
}

void GilTotals::merge(const GilTotals& other) {
  reported += other.reported;
  waits.merge(other.waits);
}

void fill_gil_stats(const GilTotals& d, double interval_s, sinks::Record& r) {
  const GilStatsSchema& s = gil_stats_schema();
  r.set_float(s.interval_s, round_ms(interval_s));
  r.set_uint(s.waits, d.waits.count);
  r.set_float(s.total_wait_ms, ns_to_ms(d.waits.total_ns));
  r.set_float(s.p50_ms, d.waits.quantile_ms(0.5));
  r.set_float(s.p90_ms, d.waits.quantile_ms(0.9));
  r.set_float(s.p99_ms, d.waits.quantile_ms(0.99));
  r.set_float(s.max_ms, ns_to_ms(d.waits.max_ns));
  r.set_uint(s.reported, d.reported);
  r.set_json(s.histogram, histogram_json(d.waits.hist));
}

GilDecoder::GilDecoder(ThreadLookup lookup)
    : lookup_(std::move(lookup)), scratch_(std::make_unique<pyebpf_gil_event>()) {}

Decoded GilDecoder::decode(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& r) {
  const GilWaitSchema& s = gil_wait_schema();
  if (size < PYEBPF_GIL_EVENT_BYTES(0)) return Decoded::Malformed;
  pyebpf_gil_event& ev = *scratch_;
  ev = {};
  std::memcpy(&ev, data, std::min(size, sizeof(ev)));
  const auto pid = static_cast<pid_t>(ev.hdr.pid);
  auto* frames = ctx.targets.frames(pid);
  if (!frames) return Decoded::Skipped;  // target already gone and forgotten

  if (ev.holder_thread_id && !ev.holder_tid) {
    if (auto thread = lookup_(ev.hdr.pid, ev.holder_thread_id)) {
      ev.holder_tid = thread->tid;
      ev.holder_ns_tid = thread->ns_tid;
      ++resolved_late_;
    }
  }
  r.clear();
  set_thread_fields(r, ctx, ev.hdr);
  r.set_float(s.duration_ms, ns_to_ms(ev.duration_ns));
  r.set_uint(s.holder_tid, ev.holder_tid);
  r.set_uint(s.holder_container_tid, ev.holder_ns_tid);
  std::optional<std::string> holder;
  if (ev.holder_thread_id) holder = ctx.targets.thread_name(pid, ev.holder_thread_id, ev.holder_ns_tid);
  if (!holder) holder = ev.holder_tid ? read_comm(pid, static_cast<pid_t>(ev.holder_tid)) : std::string();
  r.set_text(s.holder_thread_name, *holder);
  add_python_stack(r, s.waiter_py, *frames, ev.waiter_stack, sizeof(ev.waiter_stack));
  add_python_stack(r, s.holder_py, *frames, ev.holder_stack, size - PYEBPF_GIL_EVENT_FIXED_BYTES);
  r.set_uint(s.holder_changes, ev.holder_changes);
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

// GIL: every wait's count, total and percentiles (gil_stats); holders by the
// wait they caused (and what they were running), and who waited (gil_wait
// events: the waits at or above the threshold).
//
// Thread names and leaf frames are kept once each and events add to maps of
// their ids: with maps keyed by strings, a 500-thread convoy spent a quarter
// of pyebpf's CPU here copying, hashing and comparing them.
class GilSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    if (&r.schema() == &gil_stats_schema()) {
      add_stats(r);
      return;
    }
    const GilWaitSchema& s = gil_wait_schema();
    double wait = r.number(s.duration_ms).value_or(0);
    ++waits_;
    const std::size_t depth = r.kind(s.holder_py_stack) == sinks::Record::Kind::PyStack ? r.size(s.holder_py_stack) : 0;
    scratch_.clear();
    if (depth)
      stack::append_text(scratch_, r.py_frame(s.holder_py_stack, depth - 1));
    else
      scratch_ = "(no Python stack)";
    HolderKey key{intern(holder_of(r)), intern(scratch_)};
    if (!holders_.count(key) && holders_.size() >= kMaxKeys) key = {intern(kOtherThreads), intern("")};
    auto [it, fresh] = holders_.try_emplace(key);
    Holder& h = it->second;
    if (fresh)
      h.running = depth && texts_[key.first] != kOtherThreads ? short_frame(r.py_frame(s.holder_py_stack, depth - 1))
                                                              : scratch_;
    h.time.ms += wait;
    ++h.time.count;
    h.time.max_ms = std::max(h.time.max_ms, wait);
    h.waiters[intern(thread_of(r))] += wait;
  }

  void render(std::string& out) const override {
    if (!stats_.count) return;
    heading(out, fmt::format("GIL: holders by the wait they caused  [gil_stats: {} waits, {} ms; gil_wait: {} waits]",
                             stats_.count, ms(stats_.total_ms), waits_));
    out += fmt::format("  every wait: total {} ms, p50 {} ms, p90 {} ms, p99 {} ms, max {} ms\n", ms(stats_.total_ms),
                       ms(stats_.quantile_ms(0.5)), ms(stats_.quantile_ms(0.9)), ms(stats_.quantile_ms(0.99)),
                       ms(stats_.max_ms));
    out += fmt::format("  {} at or above --gil-min-wait-ms, reported with stacks below\n", count_text(reported_));
    if (waits_ == 0) return;
    std::map<std::pair<std::string_view, std::string_view>, const Holder*> by_text;
    for (const auto& [key, h] : holders_)
      by_text.emplace(std::pair<std::string_view, std::string_view>(texts_[key.first], texts_[key.second]), &h);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> waiters;
    for (const auto& [key, h] : top(
             by_text, [](const Holder* x) { return x->time.ms; }, kTop)) {
      rows.push_back({ms(h->time.ms), count_text(h->time.count), std::string(key.first), h->running});
      std::map<std::string_view, double> by_name;
      for (const auto& [id, waited] : h->waiters) by_name.emplace(texts_[id], waited);
      waiters.push_back("waiting (ms): " + thread_list(by_name, true));
    }
    table(out,
          {{"wait ms", 10, true}, {"waits", 6, true}, {"holder thread", 24}, {"holder was running", 0, false, true}},
          rows, waiters);
  }

 private:
  using TextId = std::uint32_t;
  // What holders, waiters and frames past kMaxKeys distinct ones add to.
  static constexpr std::string_view kOtherThreads = "(other threads: too many distinct names and frames)";
  // The holder of a wait: its thread name, else its tid.
  std::string_view holder_of(const sinks::Record& r) {
    const GilWaitSchema& s = gil_wait_schema();
    std::string_view holder = r.text(s.holder_thread_name);
    if (!holder.empty()) return holder;
    auto tid = r.number(s.holder_tid).value_or(0);
    holder_scratch_ = tid > 0 ? fmt::format("tid {}", static_cast<long>(tid)) : "(unknown holder)";
    return holder_scratch_;
  }
  // The id of `text`, kept once; past kMaxKeys distinct texts (thread names
  // churning for hours) new ones share kOtherThreads'.
  TextId intern(std::string_view text) {
    if (auto it = ids_.find(text); it != ids_.end()) return it->second;
    if (texts_.size() >= kMaxKeys && text != kOtherThreads) return intern(kOtherThreads);
    texts_.emplace_back(text);
    ids_.emplace(texts_.back(), static_cast<TextId>(texts_.size() - 1));
    return static_cast<TextId>(texts_.size() - 1);
  }

  struct Holder {
    Timed time;
    std::unordered_map<TextId, double> waiters;  // waiting thread -> ms
    std::string running;                         // the holder's leaf frame, file by base name
  };
  using HolderKey = std::pair<TextId, TextId>;  // (holder thread, holder's leaf frame)
  struct HolderKeyHash {
    std::size_t operator()(const HolderKey& k) const {
      return std::hash<std::uint64_t>()(std::uint64_t{k.first} << 32 | k.second);
    }
  };
  void add_stats(const sinks::Record& r) {
    const GilStatsSchema& s = gil_stats_schema();
    stats_.merge(recorded_latency(r, s.waits, s.total_wait_ms, s.max_ms, s.histogram));
    reported_ += static_cast<std::uint64_t>(r.number(s.reported).value_or(0));
  }

  std::deque<std::string> texts_;  // by TextId; a deque keeps the views in ids_ valid
  std::unordered_map<std::string_view, TextId> ids_;
  std::unordered_map<HolderKey, Holder, HolderKeyHash> holders_;
  std::string scratch_, holder_scratch_;
  std::uint64_t waits_ = 0;  // gil_wait events
  RecordedLatency stats_;
  std::uint64_t reported_ = 0;
};

}  // namespace

void gil_top(const sinks::Record& r, live::Tally& tally) {
  const GilWaitSchema& s = gil_wait_schema();
  const auto ms = &r.schema() == &s ? r.number(s.duration_ms) : std::nullopt;
  if (!ms) return;
  const std::string holder = sinks::report::field_text(r, s.holder_thread_name, "");
  tally.wait(r, "GIL", *ms, holder.empty() ? "" : "held by " + holder);
}

std::unique_ptr<sinks::ReportSection> make_gil_report() {
  return std::make_unique<GilSection>();
}

std::vector<sinks::FlameGraphKind> gil_flame_graphs() {
  sinks::FlameGraphKind gil;
  gil.name = "GIL wait";
  gil.file_suffix = "gil_wait";
  gil.schema = &gil_wait_schema();
  gil.folded_scale = 1000;  // ms -> whole microseconds
  gil.pprof_type = "gil_wait";
  gil.sample = [holder = std::string()](const sinks::Record& r, std::vector<sinks::FlameFrame>& frames) mutable {
    const GilWaitSchema& s = gil_wait_schema();
    sinks::append_py_frames(r, s.waiter_py_stack, frames);
    std::string name(r.text(s.holder_thread_name));
    const auto holder_tid = static_cast<std::uint64_t>(r.number(s.holder_tid).value_or(0));
    if (name.empty()) name = holder_tid ? fmt::format("tid {}", holder_tid) : "?";
    holder = "GIL held by " + name;
    frames.push_back({sinks::FlameFrame::Kind::Label, holder});
    return r.number(s.duration_ms).value_or(0);
  };
  return {gil};
}

}  // namespace pyebpf::trackers
