// SPDX-License-Identifier: Apache-2.0
#include "trackers/offcpu/offcpu_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "live/tally.hpp"
#include "sinks/report_text.hpp"
#include "trackers/offcpu/offcpu_blocked.hpp"

namespace pyebpf::trackers {

const OffCpuSchema& off_cpu_schema() {
  static const OffCpuSchema schema;
  return schema;
}

std::string format_prev_state(std::uint32_t state) {
  constexpr std::uint32_t idle = PYEBPF_TASK_UNINTERRUPTIBLE | PYEBPF_TASK_NOLOAD;
  if ((state & idle) == idle) return "I";  // TASK_IDLE: a kernel wait that is not load
  std::uint32_t bits = state & PYEBPF_TASK_REPORT;
  if (state & PYEBPF_TASK_RTLOCK_WAIT) bits |= PYEBPF_TASK_UNINTERRUPTIBLE;  // PREEMPT_RT sleeping lock
  if (state == PYEBPF_TASK_RUNNING) return "R";
  static constexpr char kLetters[] = "SDTtXZP";
  std::string out;
  for (int bit = 0; bit < 7; ++bit) {
    if (bits & (1u << bit)) out += kLetters[bit];
  }
  return out.empty() ? fmt::format("?({:#x})", state) : out;
}

void root_first_stack(const pyebpf_offcpu_native_stack& stack, std::size_t max_depth,
                      const std::function<stack::NativeFrame(std::uint64_t, bool)>& frame,
                      const std::function<bool(const stack::NativeFrame&)>& skip_leaf,
                      std::vector<stack::NativeFrame>& out) {
  std::size_t depth = std::min<std::size_t>(stack.depth, PYEBPF_OFFCPU_NATIVE_SLOTS);
  std::size_t first = 0;
  std::vector<stack::NativeFrame> leaf_first;
  leaf_first.reserve(depth);
  for (std::size_t i = 0; i < depth; ++i) {
    leaf_first.push_back(frame(stack.ips[i], i > 0));
    if (first == i && skip_leaf && skip_leaf(leaf_first.back())) ++first;
  }
  std::size_t end = std::min(depth, first + max_depth);
  out.clear();
  if (end < depth) out.push_back({stack::NativeFrame::Kind::Truncated});
  for (std::size_t i = end; i > first; --i) out.push_back(leaf_first[i - 1]);
}

bool is_tracing_frame(const stack::NativeFrame& frame) {
  if (frame.kind != stack::NativeFrame::Kind::Symbol) return false;
  if (frame.module == "bpf") return true;
  for (std::string_view prefix : {"bpf_", "__bpf_", "__traceiter_", "perf_", "trace_call_bpf"}) {
    if (frame.symbol.starts_with(prefix)) return true;
  }
  return false;
}

OffCpuDecoder::OffCpuDecoder(unsigned max_depth, KernelSymbols kallsyms)
    : max_depth_(max_depth), kallsyms_(std::move(kallsyms)), scratch_(std::make_unique<pyebpf_offcpu_event>()) {}
OffCpuDecoder::~OffCpuDecoder() = default;

void OffCpuDecoder::add_native(sinks::Record& r, sinks::FieldId f) {
  r.begin_native_stack(f);
  for (const auto& frame : frames_) r.add_native_frame(frame);
}

void OffCpuDecoder::add_stacks(sinks::Record& r, const DecodeContext& ctx, std::uint32_t pid,
                               const pyebpf_offcpu_native_stack* kstack, const pyebpf_offcpu_native_stack* ustack,
                               const pyebpf_py_stack* py, std::size_t py_bytes) {
  const OffCpuSchema& s = off_cpu_schema();
  frames_.clear();
  if (kstack) {
    const native::Kallsyms& ksyms = kallsyms_();
    root_first_stack(
        *kstack, max_depth_, [&](std::uint64_t addr, bool ret) { return ksyms.frame(ret ? addr - 1 : addr); },
        is_tracing_frame, frames_);
  }
  add_native(r, s.kernel_stack);
  frames_.clear();
  if (ustack) {
    auto& sym = native_[pid];
    if (!sym) sym = std::make_unique<native::NativeSymbolizer>(static_cast<pid_t>(pid), elf_files_);
    root_first_stack(
        *ustack, max_depth_, [&](std::uint64_t addr, bool ret) { return sym->frame(addr, ret); }, {}, frames_);
  }
  add_native(r, s.user_stack);
  auto* resolver = ctx.targets.frames(static_cast<pid_t>(pid));
  if (py && resolver && py->depth > 0 && py->status != PYEBPF_STACK_NOT_WALKED) {
    add_python_stack(r, s.py, *resolver, *py, py_bytes);
  } else {
    r.begin_py_stack(s.py_stack);
    r.set_uint(s.py_stack_depth, 0);
  }
}

std::optional<std::size_t> unpack_offcpu_event(const void* data, std::size_t size, pyebpf_offcpu_event& ev) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (size < PYEBPF_OFFCPU_MIN_WIRE_BYTES) return std::nullopt;
  std::memcpy(&ev, bytes, PYEBPF_OFFCPU_FIXED_BYTES);
  std::size_t pos = PYEBPF_OFFCPU_FIXED_BYTES;
  for (pyebpf_offcpu_native_stack* st : {&ev.kstack, &ev.ustack}) {
    if (size - pos < PYEBPF_OFFCPU_NATIVE_BYTES(0)) return std::nullopt;
    std::memcpy(st, bytes + pos, PYEBPF_OFFCPU_NATIVE_BYTES(0));
    if (st->depth > PYEBPF_OFFCPU_NATIVE_SLOTS || size - pos < PYEBPF_OFFCPU_NATIVE_BYTES(st->depth))
      return std::nullopt;
    std::memcpy(st->ips, bytes + pos + PYEBPF_OFFCPU_NATIVE_BYTES(0), 8 * std::size_t{st->depth});
    pos += PYEBPF_OFFCPU_NATIVE_BYTES(st->depth);
  }
  const std::size_t py_bytes = size - pos;
  if (py_bytes < PYEBPF_STACK_BYTES(0)) return std::nullopt;
  std::memcpy(&ev.py, bytes + pos, std::min(py_bytes, sizeof(ev.py)));
  return py_bytes;
}

Decoded OffCpuDecoder::decode(const void* data, std::size_t size, const DecodeContext& ctx, sinks::Record& r) {
  const OffCpuSchema& s = off_cpu_schema();
  pyebpf_offcpu_event& ev = *scratch_;
  auto py_bytes = unpack_offcpu_event(data, size, ev);
  if (!py_bytes) return Decoded::Malformed;
  r.clear();
  set_thread_fields(r, ctx, ev.hdr);
  r.set_float(s.off_cpu_ms, ns_to_ms(ev.off_ns));
  r.set_float(s.runq_ms, ns_to_ms(ev.runq_ns));
  r.set_text(s.prev_state, format_prev_state(ev.prev_state));
  r.set_uint(s.cpu, ev.hdr.cpu);
  add_stacks(r, ctx, ev.hdr.pid, &ev.kstack, &ev.ustack, &ev.py, *py_bytes);
  return Decoded::Event;
}

namespace {

using namespace sinks::report;

// Off-CPU: top reasons by time: (state, kernel wait, thread, Python leaf).
class OffCpuSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const OffCpuSchema& s = off_cpu_schema();
    if (&r.schema() != &s) return blocked_->add(r);
    double off = r.number(s.off_cpu_ms).value_or(0);
    auto count = static_cast<std::uint64_t>(std::max(1.0, r.number(s.count).value_or(1)));
    off_cpu_ms_ += off;
    runq_ms_ += r.number(s.runq_ms).value_or(0);
    count_ += count;
    const std::size_t depth = r.kind(s.py_stack) == sinks::Record::Kind::PyStack ? r.size(s.py_stack) : 0;
    Key key{field_text(r, s.prev_state, "-"), kernel_wait(r, s.kernel_stack), std::string(thread_of(r)),
            depth ? stack::text_of(r.py_frame(s.py_stack, depth - 1)) : "-"};
    if (!reasons_.count(key) && reasons_.size() >= kMaxKeys) key = {"-", kOther, "-", "-"};
    auto [it, fresh] = reasons_.try_emplace(key);
    Reason& reason = it->second;
    if (fresh) reason.python = depth && key.kernel != kOther ? short_frame(r.py_frame(s.py_stack, depth - 1)) : "-";
    reason.time.ms += off;
    reason.time.count += count;
    reason.time.max_ms = std::max(reason.time.max_ms, count > 1 ? off / static_cast<double>(count) : off);
  }

  void render(std::string& out) const override {
    render_reasons(out);
    blocked_->render(out);
  }

 private:
  void render_reasons(std::string& out) const {
    if (count_ == 0) return;
    heading(out, fmt::format("Off-CPU: top reasons by time  [off_cpu: {} switches, {} ms off CPU, {} ms in run queue]",
                             count_, ms(off_cpu_ms_), ms(runq_ms_)));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, reason] : top(
             reasons_, [](const Reason& x) { return x.time.ms; }, kTop)) {
      const Timed& t = reason.time;
      rows.push_back({ms(t.ms), count_text(t.count), ms(t.max_ms), key.state, key.kernel, key.thread, reason.python});
    }
    table(out,
          {{"total ms", 10, true},
           {"count", 7, true},
           {"max ms", 9, true},
           {"st", 2},
           {"kernel wait", 14},
           {"thread", 22},
           {"python (leaf)", 0, false, true}},
          rows);
  }

  struct Key {
    std::string state, kernel, thread, python;
    bool operator<(const Key& o) const {
      return std::tie(state, kernel, thread, python) < std::tie(o.state, o.kernel, o.thread, o.python);
    }
  };
  struct Reason {
    Timed time;
    std::string python;  // the Python leaf, file by base name
  };
  std::map<Key, Reason> reasons_;
  double off_cpu_ms_ = 0, runq_ms_ = 0;
  std::uint64_t count_ = 0;
  std::unique_ptr<sinks::ReportSection> blocked_ = make_blocked_report();  // off_cpu_blocked records
};

}  // namespace

void offcpu_top(const sinks::Record& r, live::Tally& tally) {
  const OffCpuSchema& s = off_cpu_schema();
  const auto ms = &r.schema() == &s ? r.number(s.off_cpu_ms) : std::nullopt;
  if (!ms) return;
  std::string reason = sinks::report::kernel_wait(r, s.kernel_stack);
  if (reason == "-") reason = sinks::report::field_text(r, s.prev_state, "");
  if (r.kind(s.py_stack) == sinks::Record::Kind::PyStack && r.size(s.py_stack))
    reason += " in " + sinks::report::short_frame(r.py_frame(s.py_stack, r.size(s.py_stack) - 1));
  tally.wait(r, "off-CPU", *ms, reason);
}

std::unique_ptr<sinks::ReportSection> make_offcpu_report() {
  return std::make_unique<OffCpuSection>();
}

namespace {

// Whether a native frame is CPython's evaluation loop: the Python stack
// stands for it and for everything on its root side.
bool is_eval_loop(const stack::NativeFrame& f) {
  return f.kind == stack::NativeFrame::Kind::Symbol &&
         (f.symbol.starts_with("_PyEval_EvalFrame") || f.symbol.starts_with("PyEval_EvalFrame"));
}

sinks::FlameFrame flame_frame(const stack::NativeFrame& f, sinks::FlameFrame::Kind kind) {
  using K = stack::NativeFrame::Kind;
  std::string_view name = f.kind == K::Symbol ? f.symbol : f.kind == K::Truncated ? stack::kTruncated : stack::kUnknown;
  return {kind, name, f.kind == K::Symbol || f.kind == K::InModule ? f.module : std::string_view()};
}

}  // namespace

std::vector<sinks::FlameGraphKind> offcpu_flame_graphs() {
  sinks::FlameGraphKind off;
  off.name = "off-CPU";
  off.file_suffix = "off_cpu";
  off.schema = &off_cpu_schema();
  off.folded_scale = 1000;  // ms -> whole microseconds
  off.pprof_type = "off_cpu";
  off.sample = [](const sinks::Record& r, std::vector<sinks::FlameFrame>& frames) {
    using K = sinks::Record::Kind;
    const OffCpuSchema& s = off_cpu_schema();
    sinks::append_py_frames(r, s.py_stack, frames);
    // User-space frames: those on the leaf side of the interpreter's last
    // evaluation loop (the C code Python called: a libc wrapper, an
    // extension), or the leaf alone where the stack shows no loop: without
    // frame pointers (most builds, docs/trackers/offcpu.md) only a user
    // stack's leaf is sure.
    if (r.kind(s.user_stack) == K::NativeStack && r.size(s.user_stack) > 0) {
      const std::size_t n = r.size(s.user_stack);
      std::size_t from = n - 1;
      for (std::size_t i = n; i-- > 0;) {
        if (is_eval_loop(r.native_frame(s.user_stack, i))) {
          from = i + 1;
          break;
        }
      }
      for (std::size_t i = from; i < n; ++i)
        frames.push_back(flame_frame(r.native_frame(s.user_stack, i), sinks::FlameFrame::Kind::Native));
    }
    for (std::size_t i = 0; r.kind(s.kernel_stack) == K::NativeStack && i < r.size(s.kernel_stack); ++i)
      frames.push_back(flame_frame(r.native_frame(s.kernel_stack, i), sinks::FlameFrame::Kind::Kernel));
    return r.number(s.off_cpu_ms).value_or(0);
  };
  return {off};
}

}  // namespace pyebpf::trackers
