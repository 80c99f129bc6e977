// SPDX-License-Identifier: Apache-2.0
#include "trackers/offcpu/offcpu.hpp"

#include <bpf/bpf.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>

#include "bpf_runtime/features.hpp"
#include "offcpu.skel.h"
#include "pyebpf/error.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "util/clock.hpp"
#include "util/flag_rules.hpp"
#include "util/timer.hpp"

namespace pyebpf::trackers {
namespace {

constexpr const char* kTracepoints[] = {"sched_switch", "sched_waking", "sched_wakeup_new"};

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

using AggEntry = std::pair<pyebpf_offcpu_agg_key, pyebpf_offcpu_agg_value>;

// Takes the entries of generations other than `gen` out of the agg map, by
// thread and, within one, the longest off CPU and in run queues first.
std::vector<AggEntry> take_entries(int agg_fd, __u32 gen) {
  std::vector<AggEntry> entries;
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
  return entries;
}

// What an aggregated record prints: its thread, state and stacks.
std::string printed_identity(const pyebpf_offcpu_agg_key& k, const sinks::Record& r, const OffCpuSchema& s) {
  std::string identity = fmt::format("{}/{}/{}/", k.pid, k.tid, k.prev_state);
  for (sinks::FieldId f : {s.kernel_stack, s.user_stack}) {
    for (std::size_t i = 0; i < r.size(f); ++i) stack::append_text(identity += '/', r.native_frame(f, i));
    identity += '|';
  }
  for (std::size_t i = 0; i < r.size(s.py_stack); ++i) stack::append_text(identity += ';', r.py_frame(s.py_stack, i));
  if (r.has(s.py_stack_partial)) identity += ";partial";
  return identity;
}

// Entries whose stacks differ only beyond the depth limit print the same:
// merged here, so every record is one unique (thread, state, stacks) as printed.
class MergedRecords {
 public:
  struct Merged {
    sinks::Record record;
    std::uint64_t count = 0, off_ns = 0, runq_ns = 0, max_off_ns = 0;
  };

  // Adds an entry's totals to the record that prints as `identity`, a copy
  // of `record` if it is the first.
  void add(const std::string& identity, const sinks::Record& record, const pyebpf_offcpu_agg_value& v) {
    auto [it, fresh] = index_.emplace(identity, merged_.size());
    if (fresh) merged_.push_back({record});
    Merged& m = merged_[it->second];
    m.count += v.count;
    m.off_ns += v.off_ns;
    m.runq_ns += v.runq_ns;
    m.max_off_ns = std::max<std::uint64_t>(m.max_off_ns, v.max_off_ns);
  }
  std::vector<Merged>& records() { return merged_; }

 private:
  std::vector<Merged> merged_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace

OffCpuTracker::OffCpuTracker(const OffCpuOptions& options)
    : BpfTracker("offcpu", {offcpu_bpf__open, offcpu_bpf__load, offcpu_bpf__destroy}),
      options_(options),
      decoder_(options.max_stack_depth, [this]() -> const native::Kallsyms& { return kallsyms(); }),
      record_(off_cpu_schema()) {
  if (options.blocked_after_s > 0) blocked_.emplace(options.blocked_after_s, options.min_total_ms);
}
OffCpuTracker::~OffCpuTracker() = default;

OffCpuTracker::Skeleton OffCpuTracker::open_and_load(const Hooks& hooks) const {
  const OffCpuOptions& o = options_;
  Skeleton skel = open_skeleton();
  auto* p = &skel->progs;
  bpf_program__set_autoload(p->offcpu_switch_btf, hooks.tp_btf);
  for (bpf_program* prog : {p->offcpu_waking_btf, p->offcpu_wakeup_new_btf})
    bpf_program__set_autoload(prog, hooks.tp_btf && !hooks.runq_from_kernel);
  for (bpf_program* prog : {p->offcpu_switch_raw, p->offcpu_waking_raw, p->offcpu_wakeup_new_raw})
    bpf_program__set_autoload(prog, !hooks.tp_btf);
  bpf_program__set_autoload(p->offcpu_resume_btf, hooks.tp_btf && hooks.at_resume);
  bpf_program__set_autoload(p->offcpu_resume_raw, !hooks.tp_btf && hooks.at_resume);
  // Thread records: task storage for the tp_btf hooks, the tid-keyed LRU
  // hash (16,384 preallocated entries) for the raw_tp ones; the other stays
  // unmade or minimal.
  bpf_map__set_autocreate(skel->maps.thread_records, hooks.tp_btf);
  if (hooks.tp_btf) bpf_map__set_max_entries(skel->maps.threads, 1);

  skel->rodata->targ_min_off_ns = static_cast<__u64>(o.min_total_ms * 1e6);
  skel->rodata->targ_py_min_ns = static_cast<__u64>(o.py_min_ms * 1e6);
  skel->rodata->targ_py_enable = o.py_enable;
  skel->rodata->targ_use_bpf_loop = bpf::walk_frames_with_bpf_loop();
  skel->rodata->targ_max_depth = std::clamp(o.max_stack_depth, 1u, unsigned{PYEBPF_OFFCPU_MAX_NATIVE});
  skel->rodata->targ_aggregate = o.aggregate_s > 0;
  skel->rodata->targ_runq_from_kernel = hooks.tp_btf && hooks.runq_from_kernel;
  skel->rodata->targ_capture = hooks.at_resume ? PYEBPF_OFFCPU_CAPTURE_AT_RESUME : PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT;
  if (hooks.at_resume) bpf_map__set_max_entries(skel->maps.stashed, 1);
  if (o.aggregate_s > 0) {
    bpf_map__set_max_entries(skel->maps.events, 64 * 1024);  // unused: nothing is sent per event
  } else {
    for (bpf_map* m : {skel->maps.agg, skel->maps.agg_kstacks, skel->maps.agg_ustacks, skel->maps.agg_pystacks})
      bpf_map__set_max_entries(m, 1);
    // Sleeps at or above the default threshold come at most 50 a second per
    // thread: 1 MiB (~1,700 packed events) covers the reader's absences. A
    // lower one may send every sleep: 4 MiB, ~0.35 s of 20,000 events/s. The
    // reader's longest absence is at start, while the trackers started after
    // this one attach (~0.1 s here): the workload of bench/observer's burst
    // row, 20,000 sleeps/s from before attach, lost 300-700 full-size events
    // with 1 MiB.
    if (o.min_total_ms < OffCpuOptions{}.min_total_ms) bpf_map__set_max_entries(skel->maps.events, 4u << 20);
  }
  skel.load(ctx_->shared_maps, " (" + hooks.family() + " hooks)");
  return skel;
}

void OffCpuTracker::attach(const Hooks& hooks) {
  auto* p = &skel_->progs;
  std::vector<std::pair<bpf_program*, const char*>> progs = {
      {hooks.tp_btf ? p->offcpu_switch_btf : p->offcpu_switch_raw, "sched_switch"},
  };
  if (!hooks.tp_btf || !hooks.runq_from_kernel) {
    progs.emplace_back(hooks.tp_btf ? p->offcpu_waking_btf : p->offcpu_waking_raw, "sched_waking");
    progs.emplace_back(hooks.tp_btf ? p->offcpu_wakeup_new_btf : p->offcpu_wakeup_new_raw, "sched_wakeup_new");
  }
  if (hooks.at_resume) progs.emplace_back(hooks.tp_btf ? p->offcpu_resume_btf : p->offcpu_resume_raw, "sched_exit_tp");
  hooks_.clear();
  for (const auto& [prog, tracepoint] : progs) {
    std::string hook = hooks.family() + "/" + tracepoint;
    bpf_link* link = bpf_program__attach(prog);
    if (!link) throw Error(errno_text("offcpu: attach " + hook, errno));
    links_.emplace_back(link);
    hooks_.push_back(hook);
  }
}

void OffCpuTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;  // the object is opened by open_and_load, once per hook family tried
  const OffCpuOptions& o = options_;
  Hooks hooks;
  hooks.tp_btf = o.hook == "tp_btf";
  if (o.hook == "auto") {
    hooks.tp_btf = std::all_of(std::begin(kTracepoints), std::end(kTracepoints),
                               [](const char* tp) { return bpf::kernel_loads_tp_btf(tp); });
    if (!hooks.tp_btf)
      spdlog::info("offcpu: this kernel cannot load tp_btf programs for the scheduler tracepoints; using raw_tp");
  }
  // sched_exit_tp (Linux >= 6.16) lets stacks be taken only for sleeps that
  // are reported; its BTF type tells whether the kernel has it.
  bool has_exit_tp = bpf::kernel_has_btf_tracepoint("sched_exit_tp");
  hooks.at_resume = o.capture == "resume" || (o.capture == "auto" && has_exit_tp);
  // The kernel's per-thread run-queue accounting (CONFIG_SCHED_INFO), read
  // at switch-out and switch-in, spares a hook on every wake-up of the host.
  // At switch-in the wait ending then is the run queue's clock minus
  // last_queued, and the run queue is reached through the task's cfs_rq.
  hooks.runq_from_kernel =
      hooks.at_resume && has_exit_tp && bpf::kernel_struct_has_member("sched_info", "last_queued") &&
      bpf::kernel_struct_has_member("sched_entity", "cfs_rq") && bpf::kernel_struct_has_member("cfs_rq", "rq");
  if (o.capture == "auto" && !has_exit_tp)
    spdlog::info(
        "offcpu: no sched_exit_tp tracepoint in this kernel (Linux < 6.16): stacks are taken at every "
        "switch-out of a target thread, which costs more per sleep");
  try {
    skel_ = open_and_load(hooks);
    attach(hooks);
  } catch (const Error& e) {
    if (o.hook != "auto" || !hooks.tp_btf) throw;
    spdlog::warn("offcpu: {}; falling back to raw_tp", e.what());
    links_.clear();
    skel_.reset();
    hooks.tp_btf = false;
    skel_ = open_and_load(hooks);
    attach(hooks);
  }
  at_resume_ = hooks.at_resume;
  runq_from_kernel_ = hooks.tp_btf && hooks.runq_from_kernel;
  if (blocked_) blocked_->start(ctx);

  if (o.aggregate_s > 0) {
    agg_timer_ = make_timer(from_seconds(o.aggregate_s), from_seconds(o.aggregate_s));
    interval_start_ns_ = monotonic_ns();
  } else {
    read_events(std::chrono::milliseconds(PYEBPF_OFFCPU_POLL_MS));
  }
  spdlog::info(
      "offcpu: hooks {}; run-queue time from {}; stacks taken {}; {}; sleeps >= {} ms; Python stacks {}; "
      "kernel/user stacks up to {} frames",
      fmt::join(hooks_, ", "),
      runq_from_kernel_ ? "the kernel's sched_info (run_delay, last_queued), read at switch-in" : "sched_waking",
      at_resume_ ? "when a reported sleep resumes" : "at every switch-out",
      o.aggregate_s > 0 ? fmt::format("aggregated in BPF, emitted every {} s", o.aggregate_s)
                        : std::string("one event per sleep"),
      o.min_total_ms, o.py_enable ? fmt::format("on (sleeps >= {} ms)", o.py_min_ms) : std::string("off"),
      skel_->rodata->targ_max_depth);
}

std::vector<int> OffCpuTracker::wait_fds() const {
  if (events_) return BpfTracker::wait_fds();
  return {agg_timer_.get()};
}

void OffCpuTracker::consume() {
  BpfTracker::consume();
  decode_held(false);
  if (agg_timer_ && expired(agg_timer_)) flush_aggregates();
}

void OffCpuTracker::finish() {
  decode_held(true);
  if (agg_timer_ && skel_) flush_aggregates();  // the partial last interval
  if (blocked_ && ctx_) blocked_->finish(*ctx_, kallsyms());
}

// Reading /proc/kallsyms takes 0.1 s here and up to a second on big hosts,
// with twice the final table (~5 MB) of transient heap: it runs in the
// background from the first tick on, once every tracker has started, so it
// adds to neither start-up's time nor its peak memory (which holds the
// parsed kernel BTF). Events that come meanwhile wait in held_ (handle()).
void OffCpuTracker::tick() {
  start_kallsyms_load();
  decode_held(false);
  if (blocked_ && ctx_ && kallsyms_ready()) blocked_->tick(*ctx_, kallsyms());
}

void OffCpuTracker::start_kallsyms_load() {
  if (kallsyms_ || kallsyms_loading_.valid()) return;
  kallsyms_loading_ = std::async(std::launch::async, [] {
    native::Kallsyms table = native::Kallsyms::load();
    malloc_trim(0);  // the growth copies, freed in this thread's own arena
    return table;
  });
}

bool OffCpuTracker::kallsyms_ready() const {
  return kallsyms_ || (kallsyms_loading_.valid() &&
                       kallsyms_loading_.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
}

const native::Kallsyms& OffCpuTracker::kallsyms() {
  if (!kallsyms_) {
    kallsyms_ = kallsyms_loading_.valid() ? kallsyms_loading_.get() : native::Kallsyms::load();
    if (kallsyms_->size() == 0)
      spdlog::warn("offcpu: kernel stacks show addresses only: /proc/kallsyms is {}",
                   kallsyms_->zero_addresses() ? "hiding addresses (kptr_restrict; run as root)" : "unreadable");
  }
  return *kallsyms_;
}

void OffCpuTracker::decode_held(bool wait) {
  if (held_.empty() || (!wait && !kallsyms_ready())) return;
  auto held = std::move(held_);
  held_.clear();
  held_bytes_ = 0;
  for (const std::string& bytes : held) decode(bytes.data(), bytes.size());
}

void OffCpuTracker::remove_target(pid_t pid) {
  (void)pid;
  decode_held(true);  // while the target is still known: its threads' names, its code objects
}

// An event that comes before the kernel symbols are loaded is held (a copy
// of its bytes) instead of waiting for them: a burst of sleeps just after
// attach fills the 1 MiB ring in ~50 ms, less than the load takes, and was
// lost (1,733 of 62,516 events, 4 threads at ~21,000 sleeps/s). Held
// events are decoded in order, before any later one, once the table is there;
// past kMaxHeldBytes the reader waits for it as before.
void OffCpuTracker::handle(const void* data, std::size_t size) {
  if (!kallsyms_ready()) {
    start_kallsyms_load();
    if (held_bytes_ + size <= kMaxHeldBytes) {
      held_.emplace_back(static_cast<const char*>(data), size);
      held_bytes_ += size;
      return;
    }
  }
  decode_held(true);
  decode(data, size);
}

void OffCpuTracker::decode(const void* data, std::size_t size) {
  deliver(decoder_.decode(data, size, decode_context(*ctx_), record_), record_);
}

bool OffCpuTracker::read_agg_stack(bpf_map* map, __u32 gen, __u64 hash, void* out) {
  if (!hash) return false;
  pyebpf_offcpu_stack_key key{gen, 0, hash};
  if (bpf_map_lookup_elem(bpf_map__fd(map), &key, out) == 0) return true;
  ++agg_missing_stacks_;
  return false;
}

void OffCpuTracker::flush_aggregates() {
  // Switch BPF to the next generation, then drain every older one: entries
  // BPF adds meanwhile land in the new generation and wait for the next flush.
  __u32 gen = skel_->bss->agg_gen + 1;
  __atomic_store_n(&skel_->bss->agg_gen, gen, __ATOMIC_SEQ_CST);
  std::uint64_t start_ns = interval_start_ns_, end_ns = monotonic_ns();
  interval_start_ns_ = end_ns;

  const OffCpuSchema& s = off_cpu_schema();
  const DecodeContext ctx = decode_context(*ctx_);
  MergedRecords merged;
  pyebpf_offcpu_native_stack kstack{}, ustack{};
  auto py = std::make_unique<pyebpf_py_stack>();
  for (const auto& [k, v] : take_entries(bpf_map__fd(skel_->maps.agg), gen)) {
    pyebpf_event_header hdr = v.hdr;
    hdr.ts_ns = start_ns;
    record_.clear();
    set_thread_fields(record_, ctx, hdr);
    record_.set_text(s.prev_state, format_prev_state(k.prev_state));
    bool has_k = read_agg_stack(skel_->maps.agg_kstacks, k.gen, k.kstack, &kstack);
    bool has_u = read_agg_stack(skel_->maps.agg_ustacks, k.gen, k.ustack, &ustack);
    bool has_py = read_agg_stack(skel_->maps.agg_pystacks, k.gen, k.pystack, py.get());
    decoder_.add_stacks(record_, ctx, k.pid, has_k ? &kstack : nullptr, has_u ? &ustack : nullptr,
                        has_py ? py.get() : nullptr, sizeof(*py));
    merged.add(printed_identity(k, record_, s), record_, v);
  }
  for (auto& m : merged.records()) {
    sinks::Record& r = m.record;
    r.set_float(s.interval_s, ns_to_ms(end_ns - start_ns) / 1e3);
    r.set_uint(s.count, m.count);
    r.set_float(s.off_cpu_ms, ns_to_ms(m.off_ns));
    r.set_float(s.runq_ms, ns_to_ms(m.runq_ns));
    r.set_float(s.max_off_cpu_ms, ns_to_ms(m.max_off_ns));
    ctx_->targets.count_event(static_cast<pid_t>(r.uint_value(sinks::thread_fields::pid)), r.metric());
    ctx_->sink.write(r);
    ++agg_records_;
  }
  // Stacks are kept one generation longer than the entries naming them: an
  // entry BPF added just after the switch is drained by the next flush and
  // must still find its stacks.
  auto stale = [gen](const pyebpf_offcpu_stack_key& k) { return k.gen + 1 < gen; };
  for (bpf_map* m : {skel_->maps.agg_kstacks, skel_->maps.agg_ustacks, skel_->maps.agg_pystacks})
    delete_keys<pyebpf_offcpu_stack_key>(bpf_map__fd(m), stale);
}

std::vector<std::string> OffCpuTracker::summary() const {
  std::vector<std::string> lines{summary_line()};
  if (blocked_) lines.push_back("offcpu: " + blocked_->summary());
  return lines;
}

std::string OffCpuTracker::summary_line() const {
  if (!skel_) return "offcpu: not started";
  Counters c = read_counters(skel_->maps.counters);
  // Runs the kernel skipped because the same program was already running on
  // that CPU (e.g. a wake-up from an interrupt during another wake-up).
  std::uint64_t skipped = 0;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) skipped += recursion_misses(prog);
  std::string out =
      fmt::format("offcpu: {} sleeps of target threads ({:.1f} s off CPU): {} at or above the threshold, {} below; ",
                  c[PYEBPF_OFFCPU_CNT_SLEEPS], static_cast<double>(c[PYEBPF_OFFCPU_CNT_OFF_NS]) / 1e9,
                  c[PYEBPF_OFFCPU_CNT_REPORTED], c[PYEBPF_CNT_FILTERED]);
  if (agg_timer_)
    out += fmt::format("{} aggregated into {} records", c[PYEBPF_OFFCPU_CNT_AGGREGATED], agg_records_);
  else
    out += fmt::format("{} emitted", counts_.emitted);
  out += fmt::format("; {} preemptions ({:.1f} s in run queues)", c[PYEBPF_OFFCPU_CNT_PREEMPTIONS],
                     static_cast<double>(c[PYEBPF_OFFCPU_CNT_PREEMPT_RUNQ_NS]) / 1e9);
  out += fmt::format(
      "; lost: {} ring buffer full{}, {} aggregation maps full, {} before their stacks were taken, "
      "{} whose return to the CPU the kernel did not report to BPF, {} whose departure from the CPU the kernel "
      "did not report to BPF, {} hook runs skipped by the kernel's recursion guard",
      c[PYEBPF_CNT_RINGBUF_FULL], malformed_note(counts_.malformed), c[PYEBPF_OFFCPU_CNT_AGG_FULL],
      c[PYEBPF_OFFCPU_CNT_CAPTURE_MISSED], c[PYEBPF_OFFCPU_CNT_END_UNSEEN], c[PYEBPF_OFFCPU_CNT_START_UNSEEN], skipped);
  if (agg_missing_stacks_) out += fmt::format(", {} aggregated stacks missing", agg_missing_stacks_);
  out += fmt::format(
      "; {} wake-ups of threads never seen sleeping (asleep since before attach), {} switch-ins without a "
      "wake-up (run-queue time); {} without Python state, {} Python stacks partial, {} kernel / {} user stacks "
      "not taken",
      c[PYEBPF_OFFCPU_CNT_NO_RECORD], c[PYEBPF_OFFCPU_CNT_NO_WAKEUP], c[PYEBPF_CNT_NO_TSTATE],
      c[PYEBPF_CNT_READ_FAULT] + c[PYEBPF_CNT_FRAME_LOOP], c[PYEBPF_OFFCPU_CNT_KSTACK_FAIL],
      c[PYEBPF_OFFCPU_CNT_USTACK_FAIL]);
  return out;
}

const TrackerDescriptor& offcpu_tracker() {
  static const TrackerDescriptor d{
      .name = "offcpu",
      .help = "why threads sleep: kernel, native and Python stacks",
      .schemas = {&off_cpu_schema(), &off_cpu_blocked_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<OffCpuOptions>();
        auto* offcpu = cli.add_option_group("offcpu", "Off-CPU: why threads sleep");
        flags::check(offcpu->add_option("--offcpu-min-total-ms", o->min_total_ms,
                                        "Report sleeps (switch-out to wake-up) at least this long (default 20)"),
                     flags::zero_or_more("ms", "20"));
        flags::check(offcpu->add_option("--offcpu-py-min-ms", o->py_min_ms,
                                        "Attach the Python stack only to sleeps at least this long (default 0)"),
                     flags::zero_or_more("ms", "50"));
        offcpu
            ->add_flag("--offcpu-py-enable{true},!--no-offcpu-py-enable", o->py_enable,
                       "Walk Python stacks (default true; --offcpu-py-enable false or --no-offcpu-py-enable to skip)")
            ->expected(0, 1);
        flags::check(offcpu->add_option("--offcpu-max-stack-depth", o->max_stack_depth,
                                        "Kernel and user frames kept per stack (default 20, at most 64)"),
                     flags::whole(1, 64, "frames", "20"));
        flags::check(offcpu->add_option(
                         "--offcpu-aggregate", o->aggregate_s,
                         "Aggregate in BPF: every SECONDS emit total off-CPU time and count per thread and stacks"),
                     flags::above_zero("seconds", "10"));
        offcpu->add_option("--offcpu-hook", o->hook, "Tracepoint flavour: auto (tp_btf, else raw_tp), tp_btf, raw_tp")
            ->check(CLI::IsMember({"auto", "tp_btf", "raw_tp"}));
        offcpu
            ->add_option("--offcpu-capture", o->capture,
                         "When stacks are taken: auto (resume where the kernel has sched_exit_tp, else switch-out), "
                         "resume (only for reported sleeps), switch-out (every sleep)")
            ->check(CLI::IsMember({"auto", "resume", "switch-out"}));
        flags::check(offcpu->add_option("--offcpu-blocked-after", o->blocked_after_s,
                                        "Report a wait still in progress once it has lasted SECONDS, and at the end "
                                        "every wait in progress (metric off_cpu_blocked; default 5, 0: never)"),
                     flags::zero_or_more("seconds", "5"));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<OffCpuTracker>(static_cast<const OffCpuOptions&>(*o));
      },
      .report = make_offcpu_report,
      .flame_graphs = [](const TrackerOptions*) { return offcpu_flame_graphs(); },
      .top = [](const TrackerOptions*, const sinks::Record& r, live::Tally& tally) { offcpu_top(r, tally); },
  };
  return d;
}

}  // namespace pyebpf::trackers
