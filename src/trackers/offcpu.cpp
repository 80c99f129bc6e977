// SPDX-License-Identifier: Apache-2.0
#include "trackers/offcpu.hpp"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>

#include "bpf/features.hpp"
#include "offcpu.skel.h"
#include "pyebpf/error.hpp"
#include "python/stack_format.hpp"
#include "trackers/bpf_counters.hpp"
#include "trackers/event_fields.hpp"
#include "util/clock.hpp"
#include "util/timer.hpp"

namespace pyebpf::trackers {
namespace {

constexpr const char* kTracepoints[] = {"sched_switch", "sched_wakeup", "sched_wakeup_new"};
constexpr std::string_view kTruncated = "[truncated]";

double ms(std::uint64_t ns) {
  return std::round(static_cast<double>(ns) / 1e3) / 1e3;
}

template <typename Key, typename Fn>
void for_each_key(int map_fd, Fn&& fn) {
  Key key{}, next{};
  const Key* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    fn(key);
  }
}

// Deletes every entry whose key satisfies `pred` (collected first: deleting
// while iterating would restart the walk).
template <typename Key, typename Pred>
void delete_keys(int map_fd, Pred&& pred) {
  std::vector<Key> doomed;
  for_each_key<Key>(map_fd, [&](const Key& k) {
    if (pred(k)) doomed.push_back(k);
  });
  for (const auto& k : doomed) bpf_map_delete_elem(map_fd, &k);
}

}  // namespace

void OffCpuTracker::SkelDeleter::operator()(offcpu_bpf* skel) const noexcept {
  offcpu_bpf__destroy(skel);
}

OffCpuTracker::OffCpuTracker() : scratch_(std::make_unique<pyebpf_offcpu_event>()) {}
OffCpuTracker::~OffCpuTracker() = default;

OffCpuTracker::Skeleton OffCpuTracker::open_and_load(const Hooks& hooks) const {
  const app::Options& o = ctx_->options;
  Skeleton skel(offcpu_bpf__open());
  if (!skel) throw Error(errno_text("offcpu: open BPF object", errno));
  auto* p = &skel->progs;
  for (bpf_program* prog : {p->offcpu_switch_btf, p->offcpu_wakeup_btf, p->offcpu_wakeup_new_btf})
    bpf_program__set_autoload(prog, hooks.tp_btf);
  for (bpf_program* prog : {p->offcpu_switch_raw, p->offcpu_wakeup_raw, p->offcpu_wakeup_new_raw})
    bpf_program__set_autoload(prog, !hooks.tp_btf);
  bpf_program__set_autoload(p->offcpu_resume_btf, hooks.tp_btf && hooks.at_resume);
  bpf_program__set_autoload(p->offcpu_resume_raw, !hooks.tp_btf && hooks.at_resume);

  skel->rodata->targ_min_off_ns = static_cast<__u64>(o.offcpu_min_total_ms * 1e6);
  skel->rodata->targ_py_min_ns = static_cast<__u64>(o.offcpu_py_min_ms * 1e6);
  skel->rodata->targ_py_enable = o.offcpu_py_enable;
  skel->rodata->targ_max_depth = std::clamp(o.offcpu_max_stack_depth, 1u, unsigned{PYEBPF_OFFCPU_MAX_NATIVE});
  skel->rodata->targ_aggregate = o.offcpu_aggregate_s > 0;
  skel->rodata->targ_capture = hooks.at_resume ? PYEBPF_OFFCPU_CAPTURE_AT_RESUME : PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT;
  if (hooks.at_resume) bpf_map__set_max_entries(skel->maps.stashed, 1);
  if (o.offcpu_aggregate_s > 0) {
    bpf_map__set_max_entries(skel->maps.events, 64 * 1024);  // unused: nothing is sent per event
  } else {
    for (bpf_map* m : {skel->maps.agg, skel->maps.agg_kstacks, skel->maps.agg_ustacks, skel->maps.agg_pystacks})
      bpf_map__set_max_entries(m, 1);
  }
  ctx_->shared_maps.reuse_in(skel->obj);
  if (int err = offcpu_bpf__load(skel.get()))
    throw Error(errno_text("offcpu: load BPF object (" + hooks.family() + " hooks)", -err),
                "run with -vv to see the verifier log");
  return skel;
}

void OffCpuTracker::attach(const Hooks& hooks) {
  auto* p = &skel_->progs;
  std::vector<std::pair<bpf_program*, const char*>> progs = {
      {hooks.tp_btf ? p->offcpu_switch_btf : p->offcpu_switch_raw, "sched_switch"},
      {hooks.tp_btf ? p->offcpu_wakeup_btf : p->offcpu_wakeup_raw, "sched_wakeup"},
      {hooks.tp_btf ? p->offcpu_wakeup_new_btf : p->offcpu_wakeup_new_raw, "sched_wakeup_new"},
  };
  if (hooks.at_resume) progs.emplace_back(hooks.tp_btf ? p->offcpu_resume_btf : p->offcpu_resume_raw, "sched_exit_tp");
  hooks_.clear();
  for (const auto& [prog, tracepoint] : progs) {
    std::string hook = hooks.family() + "/" + tracepoint;
    bpf_link* link = bpf_program__attach(prog);
    if (!link) throw Error(errno_text("offcpu: attach " + hook, errno));
    links_.emplace_back(link);
    hooks_ += (hooks_.empty() ? "" : ", ") + hook;
  }
}

void OffCpuTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  const app::Options& o = ctx.options;
  Hooks hooks;
  hooks.tp_btf = o.offcpu_hook == "tp_btf";
  if (o.offcpu_hook == "auto") {
    hooks.tp_btf = std::all_of(std::begin(kTracepoints), std::end(kTracepoints),
                               [](const char* tp) { return bpf::kernel_loads_tp_btf(tp); });
    if (!hooks.tp_btf)
      spdlog::info("offcpu: this kernel cannot load tp_btf programs for the scheduler tracepoints; using raw_tp");
  }
  // sched_exit_tp (Linux >= 6.16) lets stacks be taken only for sleeps that
  // are reported; its BTF type tells whether the kernel has it.
  bool has_exit_tp = bpf::kernel_has_btf_tracepoint("sched_exit_tp");
  hooks.at_resume = o.offcpu_capture == "resume" || (o.offcpu_capture == "auto" && has_exit_tp);
  if (o.offcpu_capture == "auto" && !has_exit_tp)
    spdlog::info(
        "offcpu: no sched_exit_tp tracepoint in this kernel (Linux < 6.16): stacks are taken at every "
        "switch-out of a target thread, which costs more per sleep");
  try {
    skel_ = open_and_load(hooks);
    attach(hooks);
  } catch (const Error& e) {
    if (o.offcpu_hook != "auto" || !hooks.tp_btf) throw;
    spdlog::warn("offcpu: {}; falling back to raw_tp", e.what());
    links_.clear();
    skel_.reset();
    hooks.tp_btf = false;
    skel_ = open_and_load(hooks);
    attach(hooks);
  }
  at_resume_ = hooks.at_resume;

  // Reading /proc/kallsyms takes up to a second: in the background, ready by
  // the first event that needs it.
  kallsyms_loading_ = std::async(std::launch::async, [] { return native::Kallsyms::load(); });

  if (o.offcpu_aggregate_s > 0) {
    agg_timer_ = make_timer(from_seconds(o.offcpu_aggregate_s), from_seconds(o.offcpu_aggregate_s));
    interval_start_ns_ = monotonic_ns();
  } else {
    events_.emplace(
        skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "offcpu",
        std::chrono::milliseconds(PYEBPF_OFFCPU_POLL_MS));
  }
  spdlog::info(
      "offcpu: hooks {}; stacks taken {}; {}; sleeps >= {} ms; Python stacks {}; kernel/user stacks up to {} "
      "frames",
      hooks_, at_resume_ ? "when a reported sleep resumes" : "at every switch-out",
      o.offcpu_aggregate_s > 0 ? fmt::format("aggregated in BPF, emitted every {} s", o.offcpu_aggregate_s)
                               : std::string("one event per sleep"),
      o.offcpu_min_total_ms,
      o.offcpu_py_enable ? fmt::format("on (sleeps >= {} ms)", o.offcpu_py_min_ms) : std::string("off"),
      skel_->rodata->targ_max_depth);
}

std::vector<int> OffCpuTracker::wait_fds() const {
  if (events_) return events_->wait_fds();
  return {agg_timer_.get()};
}

void OffCpuTracker::consume() {
  if (events_) events_->consume();
  if (agg_timer_ && expired(agg_timer_)) flush_aggregates();
}

void OffCpuTracker::finish() {
  if (agg_timer_ && skel_) flush_aggregates();  // the partial last interval
}

const native::Kallsyms& OffCpuTracker::kallsyms() {
  if (kallsyms_loading_.valid()) {
    kallsyms_ = kallsyms_loading_.get();
    if (kallsyms_.size() == 0)
      spdlog::warn("offcpu: kernel stacks show addresses only: /proc/kallsyms is {}",
                   kallsyms_.zero_addresses() ? "hiding addresses (kptr_restrict; run as root)" : "unreadable");
  }
  return kallsyms_;
}

std::vector<std::string> OffCpuTracker::user_stack(std::uint32_t pid, const pyebpf_offcpu_native_stack& stack) {
  auto& sym = native_[pid];
  if (!sym) sym = std::make_unique<native::NativeSymbolizer>(static_cast<pid_t>(pid), elf_files_);
  return root_first_stack(stack, ctx_->options.offcpu_max_stack_depth,
                          [&](std::uint64_t addr, bool ret) { return sym->name(addr, ret); });
}

void OffCpuTracker::add_stacks(sinks::Event& e, std::uint32_t pid, const pyebpf_offcpu_native_stack* kstack,
                               const pyebpf_offcpu_native_stack* ustack, const pyebpf_py_stack* py,
                               std::size_t py_bytes) {
  const native::Kallsyms& ksyms = kallsyms();
  auto kernel_name = [&](std::uint64_t addr, bool ret) { return ksyms.name(ret ? addr - 1 : addr); };
  e["kernel_stack"] =
      kstack ? root_first_stack(*kstack, ctx_->options.offcpu_max_stack_depth, kernel_name, is_tracing_frame)
             : std::vector<std::string>{};
  e["user_stack"] = ustack ? user_stack(pid, *ustack) : std::vector<std::string>{};
  std::string text;
  int depth = 0;
  auto* python = ctx_->targets.python(static_cast<pid_t>(pid));
  if (py && python && py->depth > 0 && py->status != PYEBPF_STACK_NOT_WALKED) {
    auto stack = python::format_stack(python->symbolizer(), *py, py_bytes);
    text = std::move(stack.text);
    depth = stack.depth;
  }
  e["py_stack"] = text;
  e["py_stack_depth"] = depth;
}

void OffCpuTracker::handle(const void* data, std::size_t size) {
  if (size < PYEBPF_OFFCPU_EVENT_BYTES(0)) {
    ++malformed_;
    return;
  }
  pyebpf_offcpu_event& ev = *scratch_;
  std::memcpy(&ev, data, std::min(size, sizeof(ev)));
  sinks::Event e = thread_event("off_cpu", *ctx_, ev.hdr);
  e["off_cpu_ms"] = ms(ev.off_ns);
  e["runq_ms"] = ms(ev.runq_ns);
  e["prev_state"] = format_prev_state(ev.prev_state);
  e["cpu"] = ev.hdr.cpu;
  add_stacks(e, ev.hdr.pid, &ev.kstack, &ev.ustack, &ev.py, size - offsetof(pyebpf_offcpu_event, py));
  ctx_->targets.count_event(static_cast<pid_t>(ev.hdr.pid));
  ctx_->sink.write(e);
  ++emitted_;
}

void OffCpuTracker::flush_aggregates() {
  // Switch BPF to the next generation, then drain every older one: entries
  // BPF adds meanwhile land in the new generation and wait for the next flush.
  __u32 gen = skel_->bss->agg_gen + 1;
  __atomic_store_n(&skel_->bss->agg_gen, gen, __ATOMIC_SEQ_CST);
  std::uint64_t start_ns = interval_start_ns_, end_ns = monotonic_ns();
  interval_start_ns_ = end_ns;

  int agg_fd = bpf_map__fd(skel_->maps.agg);
  std::vector<std::pair<pyebpf_offcpu_agg_key, pyebpf_offcpu_agg_value>> entries;
  for_each_key<pyebpf_offcpu_agg_key>(agg_fd, [&](const pyebpf_offcpu_agg_key& k) {
    pyebpf_offcpu_agg_value v{};
    if (k.gen != gen && bpf_map_lookup_elem(agg_fd, &k, &v) == 0) entries.emplace_back(k, v);
  });
  for (const auto& [k, v] : entries) bpf_map_delete_elem(agg_fd, &k);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    if (a.first.pid != b.first.pid) return a.first.pid < b.first.pid;
    if (a.first.tid != b.first.tid) return a.first.tid < b.first.tid;
    return a.second.off_ns + a.second.runq_ns > b.second.off_ns + b.second.runq_ns;
  });

  auto lookup = [&](bpf_map* map, __u32 g, __u64 hash, void* out) {
    if (!hash) return false;
    pyebpf_offcpu_stack_key key{g, 0, hash};
    if (bpf_map_lookup_elem(bpf_map__fd(map), &key, out) == 0) return true;
    ++agg_missing_stacks_;
    return false;
  };
  // Entries whose stacks differ only beyond the depth limit print the same:
  // merged here, so every record is one unique (thread, state, stacks) as printed.
  std::vector<sinks::Event> records;
  std::map<std::string, std::size_t> index;
  pyebpf_offcpu_native_stack kstack{}, ustack{};
  auto py = std::make_unique<pyebpf_py_stack>();
  for (const auto& [k, v] : entries) {
    pyebpf_event_header hdr = v.hdr;
    hdr.ts_ns = start_ns;
    sinks::Event e = thread_event("off_cpu", *ctx_, hdr);
    e["interval_s"] = ms(end_ns - start_ns) / 1e3;
    e["count"] = v.count;
    e["off_cpu_ms"] = ms(v.off_ns);
    e["runq_ms"] = ms(v.runq_ns);
    e["max_off_cpu_ms"] = ms(v.max_off_ns);
    e["prev_state"] = format_prev_state(k.prev_state);
    bool has_k = lookup(skel_->maps.agg_kstacks, k.gen, k.kstack, &kstack);
    bool has_u = lookup(skel_->maps.agg_ustacks, k.gen, k.ustack, &ustack);
    bool has_py = lookup(skel_->maps.agg_pystacks, k.gen, k.pystack, py.get());
    add_stacks(e, k.pid, has_k ? &kstack : nullptr, has_u ? &ustack : nullptr, has_py ? py.get() : nullptr,
               sizeof(*py));
    std::string identity = fmt::format("{}/{}/{}/{}/{}/{}", k.pid, k.tid, k.prev_state, e["kernel_stack"].dump(),
                                       e["user_stack"].dump(), e["py_stack"].get<std::string>());
    auto [it, fresh] = index.emplace(identity, records.size());
    if (fresh) {
      records.push_back(std::move(e));
      continue;
    }
    sinks::Event& into = records[it->second];
    into["count"] = into["count"].get<std::uint64_t>() + v.count;
    into["off_cpu_ms"] =
        ms(static_cast<std::uint64_t>(std::llround(into["off_cpu_ms"].get<double>() * 1e6)) + v.off_ns);
    into["runq_ms"] = ms(static_cast<std::uint64_t>(std::llround(into["runq_ms"].get<double>() * 1e6)) + v.runq_ns);
    into["max_off_cpu_ms"] = std::max(into["max_off_cpu_ms"].get<double>(), ms(v.max_off_ns));
  }
  for (auto& e : records) {
    ctx_->targets.count_event(e["pid"].get<pid_t>());
    ctx_->sink.write(e);
    ++agg_records_;
  }
  // Stacks are kept one generation longer than the entries naming them: an
  // entry BPF added just after the switch is drained by the next flush and
  // must still find its stacks.
  auto stale = [gen](const pyebpf_offcpu_stack_key& k) { return k.gen + 1 < gen; };
  for (bpf_map* m : {skel_->maps.agg_kstacks, skel_->maps.agg_ustacks, skel_->maps.agg_pystacks})
    delete_keys<pyebpf_offcpu_stack_key>(bpf_map__fd(m), stale);
}

std::string OffCpuTracker::summary() const {
  if (!skel_) return "offcpu: not started";
  Counters c = read_counters(skel_->maps.counters);
  // Runs the kernel skipped because the same program was already running on
  // that CPU (e.g. a wake-up from an interrupt during another wake-up).
  std::uint64_t skipped = 0;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_program__fd(prog) >= 0 && bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0)
      skipped += info.recursion_misses;
  }
  std::string out =
      fmt::format("offcpu: {} sleeps of target threads ({:.1f} s off CPU): {} at or above the threshold, {} below; ",
                  c[PYEBPF_OFFCPU_CNT_SLEEPS], static_cast<double>(c[PYEBPF_OFFCPU_CNT_OFF_NS]) / 1e9,
                  c[PYEBPF_OFFCPU_CNT_REPORTED], c[PYEBPF_CNT_FILTERED]);
  if (agg_timer_)
    out += fmt::format("{} aggregated into {} records", c[PYEBPF_OFFCPU_CNT_AGGREGATED], agg_records_);
  else
    out += fmt::format("{} emitted", emitted_);
  out += fmt::format("; {} preemptions ({:.1f} s in run queues)", c[PYEBPF_OFFCPU_CNT_PREEMPTIONS],
                     static_cast<double>(c[PYEBPF_OFFCPU_CNT_PREEMPT_RUNQ_NS]) / 1e9);
  out += fmt::format(
      "; lost: {} ring buffer full, {} aggregation maps full, {} before their stacks were taken, "
      "{} whose return to the CPU the kernel did not report to BPF, {} hook runs skipped by the kernel's "
      "recursion guard",
      c[PYEBPF_CNT_RINGBUF_FULL] + malformed_, c[PYEBPF_OFFCPU_CNT_AGG_FULL], c[PYEBPF_OFFCPU_CNT_CAPTURE_MISSED],
      c[PYEBPF_OFFCPU_CNT_END_UNSEEN], skipped);
  if (agg_missing_stacks_) out += fmt::format(", {} aggregated stacks missing", agg_missing_stacks_);
  out += fmt::format(
      "; {} wake-ups of threads never seen sleeping (asleep since before attach), {} switch-ins without a "
      "wake-up (run-queue time); {} without Python state, {} Python stacks partial, {} kernel / {} user stacks "
      "not taken",
      c[PYEBPF_OFFCPU_CNT_NO_RECORD], c[PYEBPF_OFFCPU_CNT_NO_WAKEUP], c[PYEBPF_CNT_NO_TSTATE], c[PYEBPF_CNT_READ_FAULT],
      c[PYEBPF_OFFCPU_CNT_KSTACK_FAIL], c[PYEBPF_OFFCPU_CNT_USTACK_FAIL]);
  return out;
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

std::vector<std::string> root_first_stack(const pyebpf_offcpu_native_stack& stack, std::size_t max_depth,
                                          const std::function<std::string(std::uint64_t, bool)>& name,
                                          const std::function<bool(const std::string&)>& skip_leaf) {
  std::size_t depth = std::min<std::size_t>(stack.depth, PYEBPF_OFFCPU_NATIVE_SLOTS);
  std::size_t first = 0;
  std::vector<std::string> leaf_first;
  leaf_first.reserve(depth);
  for (std::size_t i = 0; i < depth; ++i) {
    leaf_first.push_back(name(stack.ips[i], i > 0));
    if (first == i && skip_leaf && skip_leaf(leaf_first.back())) ++first;
  }
  std::size_t end = std::min(depth, first + max_depth);
  std::vector<std::string> out;
  out.reserve(end - first + 1);
  if (end < depth) out.emplace_back(kTruncated);
  for (std::size_t i = end; i > first; --i) out.push_back(std::move(leaf_first[i - 1]));
  return out;
}

bool is_tracing_frame(const std::string& name) {
  for (std::string_view prefix : {"bpf_", "__bpf_", "__traceiter_", "perf_", "trace_call_bpf"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name.size() > 6 && name.compare(name.size() - 6, 6, " [bpf]") == 0;
}

}  // namespace pyebpf::trackers
