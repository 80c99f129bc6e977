// SPDX-License-Identifier: Apache-2.0
#include "trackers/py_stack/py_stack_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "live/tally.hpp"
#include "py_stack.h"
#include "sinks/report_text.hpp"

namespace pyebpf::trackers {

const PyStackSchema& py_stack_schema() {
  static const PyStackSchema schema;
  return schema;
}

Decoded decode_py_stack(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& r) {
  const PyStackSchema& s = py_stack_schema();
  if (size < PYEBPF_PY_STACK_EVENT_BYTES(0)) return Decoded::Malformed;
  pyebpf_py_stack_event ev{};
  std::memcpy(&ev, data, std::min(size, sizeof(ev)));
  auto* frames = ctx.targets.frames(static_cast<pid_t>(ev.hdr.pid));
  if (!frames) return Decoded::Skipped;  // target already gone and forgotten

  r.clear();
  set_thread_fields(r, ctx, ev.hdr);
  const std::size_t depth = add_python_stack(r, s.py, *frames, ev.stack, size - sizeof(ev.hdr)).depth;
  // The leaf's views point into the record's text, which each set_text may
  // move (ASan: heap-use-after-free): read the leaf again for every field.
  auto leaf = [&] { return depth ? r.py_frame(s.stack, depth - 1) : stack::PyFrame{}; };
  r.set_text(s.leaf_func, leaf().function);
  r.set_text(s.leaf_file, leaf().file);
  r.set_int(s.leaf_line, leaf().line);
  r.set_bool(s.truncated, ev.stack.truncated != 0);
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

class CpuSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const PyStackSchema& s = py_stack_schema();
    const std::string thread(thread_of(r));
    const std::size_t depth = r.kind(s.stack) == sinks::Record::Kind::PyStack ? r.size(s.stack) : 0;
    text_.clear();
    for (std::size_t i = 0; i < depth; ++i) {
      if (i) text_ += ';';
      stack::append_text(text_, r.py_frame(s.stack, i));
    }
    ++samples_;
    ++threads_[thread];
    if (depth == 0) text_ = "(no Python frames)";
    auto it = stacks_.find(text_);
    if (it == stacks_.end() && stacks_.size() >= kMaxKeys) {
      capped_ = true;
      it = stacks_.try_emplace(kOther).first;
      it->second.short_text = kOther;
    } else if (it == stacks_.end()) {
      it = stacks_.try_emplace(text_).first;
      it->second.short_text = depth ? short_stack(r, s.stack) : text_;
    }
    ++it->second.count;
    ++it->second.threads[thread];
    if (depth) ++self_[function_of(r.py_frame(s.stack, depth - 1))];
    std::set<std::string> seen;
    for (std::size_t i = 0; i < depth; ++i) {
      auto fn = function_of(r.py_frame(s.stack, i));
      if (seen.insert(fn).second && total_.size() < kMaxKeys) ++total_[fn];
    }
  }

  void render(std::string& out) const override {
    if (samples_ == 0) return;
    const double samples = static_cast<double>(samples_);
    heading(out, fmt::format("CPU: top Python stacks by share of samples  [py_stack: {} samples, {} threads]", samples_,
                             threads_.size()));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [stack, c] : top(
             stacks_, [](const Counted& x) { return static_cast<double>(x.count); }, kTop)) {
      auto main_thread = top(
                             c.threads, [](std::uint64_t x) { return static_cast<double>(x); }, 1)
                             .front()
                             .first;
      if (c.threads.size() > 1) {
        std::string more = fmt::format(" +{}", c.threads.size() - 1);
        main_thread = cut(main_thread, 24 - more.size(), false) + more;
      }
      rows.push_back({pct(static_cast<double>(c.count), samples), count_text(c.count), main_thread, c.short_text});
    }
    table(out,
          {{"share", 6, true},
           {"samples", 8, true},
           {"thread", 24},
           {"stack (root;...;leaf; files by base name)", 0, false, true}},
          rows);
    if (capped_) out += fmt::format("  (more than {} distinct stacks: the rest counted as one)\n", kMaxKeys);

    heading(out, "CPU: top functions  [self: on top of the stack; total: anywhere in it]");
    rows.clear();
    for (const auto& [fn, n] : top(
             self_, [](std::uint64_t x) { return static_cast<double>(x); }, kTop)) {
      auto t = total_.find(fn);
      rows.push_back({pct(static_cast<double>(n), samples),
                      pct(t == total_.end() ? 0 : static_cast<double>(t->second), samples), count_text(n), fn});
    }
    table(out, {{"self", 6, true}, {"total", 6, true}, {"samples", 8, true}, {"function (file)", 0, false, true}},
          rows);

    std::vector<std::string> threads;
    for (const auto& [name, n] : top(
             threads_, [](std::uint64_t x) { return static_cast<double>(x); }, 12))
      threads.push_back(name + " " + pct(static_cast<double>(n), samples));
    if (threads_.size() > 12) threads.push_back(fmt::format("+{} more", threads_.size() - 12));
    wrapped(out, "  threads:", threads);
  }

 private:
  struct Counted {
    std::uint64_t count = 0;
    std::map<std::string, std::uint64_t> threads;
    std::string short_text;  // files by base name
  };
  std::map<std::string, Counted> stacks_;       // stack -> samples, by thread
  std::map<std::string, std::uint64_t> self_;   // "func (file)" -> samples on top
  std::map<std::string, std::uint64_t> total_;  // "func (file)" -> samples anywhere
  std::map<std::string, std::uint64_t> threads_;
  std::uint64_t samples_ = 0;
  bool capped_ = false;
  std::string text_;  // the stack being added, reused
};

}  // namespace

std::unique_ptr<sinks::ReportSection> make_py_stack_report() {
  return std::make_unique<CpuSection>();
}

void py_stack_top(unsigned frequency, const sinks::Record& r, live::Tally& tally) {
  tally.cpu_sample(r, py_stack_schema().stack, 1000.0 / std::max(1u, frequency));
}

std::vector<sinks::FlameGraphKind> py_stack_flame_graphs(unsigned frequency) {
  sinks::FlameGraphKind cpu;
  cpu.name = "CPU";
  cpu.schema = &py_stack_schema();
  cpu.speedscope_ms = 1000.0 / std::max(1u, frequency);
  cpu.pprof_type = "cpu";
  cpu.counts_samples = true;
  cpu.sample = [](const sinks::Record& r, std::vector<sinks::FlameFrame>& frames) {
    sinks::append_py_frames(r, py_stack_schema().stack, frames);
    return 1.0;
  };
  return {cpu};
}

}  // namespace pyebpf::trackers
