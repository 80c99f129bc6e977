// SPDX-License-Identifier: Apache-2.0
#include "trackers/gil/gil.hpp"

#include <bpf/bpf.h>
#include <elf.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>

#include "bpf_runtime/detach.hpp"
#include "bpf_runtime/features.hpp"
#include "bpf_runtime/uprobe_links.hpp"
#include "gil.skel.h"
#include "native/libc.hpp"
#include "procfs/maps.hpp"
#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"
#include "python/process.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/flag_rules.hpp"
#include "util/text.hpp"

namespace pyebpf::trackers {
namespace {

constexpr const char* kCondWait = "pthread_cond_timedwait";

std::string basename(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

std::uint16_t gil_field(const python::OffsetsRow& row, std::string_view name, unsigned size) {
  std::uint32_t off = row.require(name);
  if (off % size != 0 || off + size > PYEBPF_GIL_STATE_BYTES)
    throw Error("offsets row " + row.label + ": " + std::string(name) + " at offset " + std::to_string(off) +
                " is outside the first " + std::to_string(PYEBPF_GIL_STATE_BYTES) + " bytes of the GIL state");
  return static_cast<std::uint16_t>(off);
}

std::uint16_t small_offset(const python::OffsetsRow& row, std::string_view name) {
  std::uint32_t off = row.require(name);
  if (off >= PYEBPF_NO_OFFSET) throw Error("offset of " + std::string(name) + " too large for the gil tracker");
  return static_cast<std::uint16_t>(off);
}

// The mapped library that defines pthread_cond_timedwait for `pid`, and where.
std::optional<GilHookPlan> plan_cond_wait(pid_t pid, const python::PythonProcess& python) {
  const auto& interp = python.interpreter();
  auto plan_in = [&](const binary::ElfFile& elf, const std::string& shown) -> std::optional<GilHookPlan> {
    auto sym = elf.symbol(kCondWait);
    if (!sym || sym->type != STT_FUNC) return std::nullopt;
    auto offset = elf.file_offset(sym->value);
    if (!offset) return std::nullopt;
    GilHookPlan plan;
    plan.hook = PYEBPF_GIL_HOOK_COND_WAIT;
    plan.binary = elf.path();
    plan.shown_binary = shown;
    plan.entries = {*sym};
    plan.offsets = {*offset};
    return plan;
  };
  // take_gil calls it through the PLT. An interpreter that does not import it
  // either carries its C library inside (static glibc/musl: probe its own
  // copy) or waits some other way (no plan: the probe would stay silent).
  if (!interp.elf.imports(kCondWait)) return plan_in(interp.elf, interp.mapped_path);

  // glibc < 2.34 has it in libpthread, which CPython links before libc: the first that defines it.
  for (const auto& m : native::c_libraries(pid)) {
    try {
      if (auto plan = plan_in(binary::ElfFile::open(procfs::open_path(pid, m)), procfs::target_path(pid, m.path)))
        return plan;
    } catch (const Error& e) {
      spdlog::debug("gil: pid {}: {}", pid, e.what());
    }
  }
  return std::nullopt;
}

// The glibc `pid` maps (the C library that defines gnu_get_libc_version), as
// the target sees it; none for musl or an unreadable one. The sched hook
// relies on glibc's condition variables and mutexes keeping their futex words
// inside the object (musl's waiters wait on a futex of their own).
std::optional<std::string> mapped_glibc(pid_t pid) {
  for (const auto& m : native::c_libraries(pid)) {
    try {
      if (binary::ElfFile::open(procfs::open_path(pid, m)).symbol("gnu_get_libc_version"))
        return procfs::target_path(pid, m.path);
    } catch (const Error& e) {
      spdlog::debug("gil: pid {}: {}", pid, e.what());
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<binary::ElfSymbol> take_gil_functions(const binary::ElfFile& elf) {
  std::vector<binary::ElfSymbol> out;
  for (auto& sym : elf.symbol_and_clones("take_gil")) {
    if (sym.type != STT_FUNC || sym.size == 0) continue;
    if (sym.name.find(".cold") != std::string::npos || sym.name.find(".part") != std::string::npos) continue;
    out.push_back(sym);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.value < b.value; });
  return out;
}

pyebpf_gil_proc make_gil_proc(const python::OffsetsRow& row, std::uint64_t gil_addr, pyebpf_gil_hook hook) {
  pyebpf_gil_proc p{};
  p.gil = gil_addr;
  p.cond = gil_addr + row.require("gil.cond");
  p.mutex = gil_addr + row.require("gil.mutex");
  p.last_holder = gil_field(row, "gil.last_holder", 8);
  p.locked = gil_field(row, "gil.locked", 4);
  p.switch_number = gil_field(row, "gil.switch_number", 8);
  // 3.12+ (gh-104812): each interpreter points at the GIL it uses, so a
  // waiter's own interpreter tells whether it waits on the main GIL.
  if (!row.field("runtime.gil")) {
    p.tstate_interp = small_offset(row, "tstate.interp");
    p.interp_ceval_gil = small_offset(row, "interp.ceval_gil");
  } else {
    p.tstate_interp = PYEBPF_NO_OFFSET;
    p.interp_ceval_gil = PYEBPF_NO_OFFSET;
  }
  p.hook = static_cast<std::uint8_t>(hook);
  return p;
}

std::uint64_t find_gil(const python::PythonProcess& python) {
  const auto& row = python.offsets();
  const auto& mem = python.objects().memory();
  const std::uint64_t runtime = python.interpreter().runtime_addr;
  std::uint64_t gil = 0;
  if (auto off = row.field("runtime.gil")) {
    gil = runtime + *off;
  } else {
    auto main = mem.read_u64(runtime + row.require("runtime.interpreters_main"));
    auto ptr = main && *main ? mem.read_u64(*main + row.require("interp.ceval_gil")) : std::nullopt;
    if (!ptr || !*ptr) throw Error("cannot read the main interpreter's GIL pointer (interp->ceval.gil)");
    gil = *ptr;
  }
  const std::string hint = "its layout differs from offsets row " + row.label + "; please report this build";
  // 3.14+ publish where the interpreter's own GIL keeps `locked` and
  // `last_holder` (_Py_DebugOffsets, from the interpreter state): the row's
  // offsets inside the GIL state must agree.
  if (auto own = row.field("interp.gil")) {
    for (const auto& [field, from_interp] :
         {std::pair{"gil.locked", "interp.gil_locked"}, std::pair{"gil.last_holder", "interp.gil_holder"}}) {
      auto published = row.field(from_interp);
      if (published && *published != *own + row.require(field))
        throw Error(std::string(field) + " is at " + std::to_string(row.require(field)) +
                        " in the GIL state, but the target's _Py_DebugOffsets put it at " +
                        std::to_string(*published - *own),
                    hint);
    }
  }
  // A GIL in use has a switch interval (µs, sys.getswitchinterval) and is
  // locked or not; anything else means the offsets do not fit this build.
  auto interval = mem.read_u64(gil + row.require("gil.interval"));
  auto locked = mem.read_value<std::int32_t>(gil + row.require("gil.locked"));
  if (!interval || !locked || *interval == 0 || *interval > 3'600'000'000ull || (*locked != 0 && *locked != 1))
    throw Error("the GIL state at " + hex(gil) + " does not look like one (gil.interval " +
                    (interval ? std::to_string(*interval) : "unreadable") + " us, gil.locked " +
                    (locked ? std::to_string(*locked) : "unreadable") + ")",
                hint);
  return gil;
}

GilHookPlan plan_gil_hook(pid_t pid, const python::PythonProcess& python, const std::string& requested,
                          bool sched_hooks) {
  const auto& interp = python.interpreter();
  // sched first: no probe in the target at all, where cond_wait traps twice
  // per round of a waiter (bench/observer's convoy rows).
  std::string why_not_sched;
  if (requested == "auto" || requested == "sched") {
    auto glibc = mapped_glibc(pid);
    if (sched_hooks && glibc) {
      GilHookPlan plan;
      plan.hook = PYEBPF_GIL_HOOK_SCHED;
      plan.shown_binary = *glibc;
      plan.why = requested == "auto" ? "the default where the kernel and C library allow it" : "--gil-hook sched";
      return plan;
    }
    why_not_sched =
        !sched_hooks ? "this kernel has no sched_exit_tp tracepoint (Linux < 6.16)" : "its C library is not glibc";
    if (requested == "sched") throw Error("--gil-hook sched: " + why_not_sched, "use --gil-hook auto");
  }
  // cond_wait next: it sees the same waits as take_gil but is hit only when
  // the GIL is contended (about 2 probe hits per 5 ms of waiting), where
  // take_gil's probes fire on every acquisition (bench/gil: 100x the hits).
  std::string why_not_cond_wait;
  if (requested == "auto" || requested == "cond_wait") {
    if (auto plan = plan_cond_wait(pid, python)) {
      plan->why = requested == "auto" ? why_not_sched + "; probes fire only while the GIL is contended"
                                      : "--gil-hook cond_wait";
      return *plan;
    }
    why_not_cond_wait = std::string("no ") + kCondWait + " found that " + interp.file_name() + " calls";
    if (requested == "cond_wait") throw Error(why_not_cond_wait, "use --gil-hook take_gil");
  }
  auto functions = take_gil_functions(interp.elf);
  if (functions.empty()) {
    std::string why = interp.elf.has_symtab() ? interp.file_name() + " has no take_gil symbol (inlined)"
                                              : interp.file_name() + " has no take_gil symbol (stripped: no .symtab)";
    throw Error(
        (why_not_cond_wait.empty() ? "" : why_not_cond_wait + ", and ") + why + "; GIL waits cannot be measured",
        requested == "take_gil" ? "use --gil-hook auto" : "run without gil in --enable for this process");
  }
  GilHookPlan plan;
  plan.hook = PYEBPF_GIL_HOOK_TAKE_GIL;
  plan.binary = interp.open_path;
  plan.shown_binary = interp.mapped_path;
  for (const auto& sym : functions) {
    auto offset = interp.elf.file_offset(sym.value);
    if (!offset) throw Error(sym.name + " in " + interp.file_name() + " is outside its PT_LOAD segments");
    plan.entries.push_back(sym);
    plan.offsets.push_back(*offset);
  }
  plan.why = why_not_cond_wait.empty() ? "--gil-hook take_gil" : why_not_cond_wait + "; falling back to take_gil";
  return plan;
}

GilTracker::GilTracker(const GilOptions& options)
    : BpfTracker("gil", {gil_bpf__open, gil_bpf__load, gil_bpf__destroy}),
      options_(options),
      decoder_([this](std::uint32_t pid, std::uint64_t thread_id) -> std::optional<pyebpf_gil_thread> {
        pyebpf_gil_thread_key key{pid, 0, thread_id};
        pyebpf_gil_thread thread{};
        if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.thread_ids), &key, &thread)) return std::nullopt;
        return thread;
      }),
      record_(gil_wait_schema()),
      stats_record_(gil_stats_schema()) {}
GilTracker::~GilTracker() = default;

void GilTracker::start(TrackerContext& ctx) {
  open(ctx);
  const GilOptions& o = options_;
  skel_->rodata->targ_min_wait_ns = static_cast<std::uint64_t>(std::llround(o.min_wait_ms * 1e6));
  skel_->rodata->targ_py_min_ns = static_cast<std::uint64_t>(std::llround(o.py_min_ms * 1e6));
  skel_->rodata->targ_py_enable = o.py_enable;
  skel_->rodata->targ_max_events = o.max_events;
  skel_->rodata->targ_use_bpf_loop = bpf::walk_frames_with_bpf_loop();
  // Every wait is counted in gil_stats; events are only the long waits, so
  // the ring is sized for them: 100 ms of the reader's absence at 4,000
  // full-size events/s (a 500-thread convoy sends ~3,000-3,600/s at the
  // default 5 ms: bench/gil/run --workload convoy) is 2 MiB; 1 MiB (50 ms)
  // lost ~7 % of them there on a loaded machine. A lower threshold asks for
  // more events: with every wait one, the convoy sends ~52,000/s, with a
  // short holder stack; a 4 MiB ring (~35 ms of them) lost 239 in a run of
  // bench/observer, so 100 ms at 60,000/s of 8-frame holders (16 MiB).
  const std::uint32_t ring = o.min_wait_ms >= kGilDefaultMinWaitMs
                                 ? bpf::ring_bytes_for(4000.0 * PYEBPF_GIL_EVENT_BYTES(PYEBPF_MAX_FRAMES), 0.1)
                                 : bpf::ring_bytes_for(60000.0 * PYEBPF_GIL_EVENT_BYTES(8), 0.1);
  bpf_map__set_max_entries(skel_->maps.events, ring);
  skel_->rodata->targ_wakeup_bytes = ring / 4;
  // Every hook stays loaded whatever the targets at start use: a process
  // found later (another CPython build, a musl container) may need another.
  // The sched hook's programs need sched_exit_tp (Linux >= 6.16).
  sched_hooks_ = bpf::kernel_has_btf_tracepoint("sched_exit_tp") && bpf::kernel_loads_tp_btf("sched_switch");
  bpf_program__set_autoload(skel_->progs.gil_sched_switch, sched_hooks_);
  bpf_program__set_autoload(skel_->progs.gil_sched_resume, sched_hooks_);
  skel_.load(ctx.shared_maps);
  stats_.emplace("gil", skel_->maps.gil_stats, &skel_->bss->stats_epoch, o.stats_interval_s,
                 [this](const pyebpf_gil_stats_key&, const pyebpf_event_header& hdr, const GilTotals& interval,
                        double interval_s) { emit_stats(hdr, interval, interval_s); });

  // Thread pointer -> tid: follow new and exiting threads first, then list
  // the existing ones, so no thread falls between the two.
  for (bpf_program* prog : {skel_->progs.gil_thread_new, skel_->progs.gil_thread_exit}) {
    bpf::Link link(bpf_program__attach(prog));
    if (!link)
      throw Error(errno_text(std::string("gil: attach ") + bpf_program__section_name(prog), errno),
                  "pyebpf needs BTF-enabled tracepoints (CONFIG_DEBUG_INFO_BTF)");
    links_.push_back(std::move(link));
  }
  // Their threads are listed once, after every target is registered.
  add_targets([this](const Target& t) { register_target(t); });
  scan_threads();
  read_events(std::chrono::milliseconds(PYEBPF_GIL_POLL_MS));
  spdlog::info(
      "gil: every wait counted in BPF, gil_stats every {} s; gil_wait events for waits >= {} ms; Python "
      "stacks {}",
      o.stats_interval_s, o.min_wait_ms,
      o.py_enable ? fmt::format("for waits >= {} ms", o.py_min_ms) : std::string("disabled"));
}

// A process found later has threads already (a forked child has one, born
// before it was registered): list them too.
void GilTracker::add_target(const Target& target) {
  register_target(target);
  scan_threads();
}

void GilTracker::register_target(const Target& target) {
  GilHookPlan plan = plan_gil_hook(target.pid, *target.python, options_.hook, sched_hooks_);
  pyebpf_gil_proc proc = make_gil_proc(target.python->offsets(), find_gil(*target.python), plan.hook);
  __u32 key = static_cast<__u32>(target.pid);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.gil_procs), &key, &proc, BPF_ANY))
    throw Error(errno_text("gil: register pid " + std::to_string(target.pid), errno));
  try {
    stats_->add({key});
    attach_process(target.pid, plan);
  } catch (const Error&) {
    remove_target(target.pid);
    throw;
  }
}

// Its pid may be reused by an unrelated process: stop following its threads.
void GilTracker::remove_target(pid_t pid) {
  __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.gil_procs), &key);
  bpf::detach_later(process_links_, pid);
  stats_->forget(pid);
}

void GilTracker::attach_sched_hooks() {
  if (sched_attached_) return;
  for (bpf_program* prog : {skel_->progs.gil_sched_switch, skel_->progs.gil_sched_resume}) {
    bpf::Link link(bpf_program__attach(prog));
    if (!link) throw Error(errno_text(std::string("gil: attach ") + bpf_program__section_name(prog), errno));
    links_.push_back(std::move(link));
  }
  sched_attached_ = true;
}

void GilTracker::attach_process(pid_t pid, const GilHookPlan& plan) {
  if (plan.hook == PYEBPF_GIL_HOOK_SCHED) {
    attach_sched_hooks();
    spdlog::info(
        "gil: pid {}: hook sched: tp_btf/sched_switch + tp_btf/sched_exit_tp, a wait is a futex wait on the GIL's "
        "condition variable or mutex ({} keeps their futex words inside them); no probe in the target ({})",
        pid, basename(plan.shown_binary), plan.why);
    return;
  }
  bool take_gil = plan.hook == PYEBPF_GIL_HOOK_TAKE_GIL;
  bpf_program* enter = take_gil ? skel_->progs.take_gil_enter : skel_->progs.cond_wait_enter;
  bpf_program* exit = take_gil ? skel_->progs.take_gil_exit : skel_->progs.cond_wait_exit;
  std::vector<std::string> where;
  std::vector<bpf::UprobeSite> sites;
  for (std::size_t i = 0; i < plan.offsets.size(); ++i) {
    where.push_back(fmt::format("{} (+{:#x})", plan.entries[i].name, plan.offsets[i]));
    sites.push_back({.offset = plan.offsets[i]});
  }
  for (bool ret : {false, true}) {
    auto links = bpf::attach_process_uprobes(ret ? exit : enter, pid, plan.binary, sites, ret);
    if (links.empty())
      throw Error(errno_text(fmt::format("gil: attach {} {} to {} (pid {})", ret ? "uretprobe" : "uprobe",
                                         fmt::join(where, ", "), basename(plan.shown_binary), pid),
                             errno));
    std::move(links.begin(), links.end(), std::back_inserter(process_links_[pid]));
  }
  if (take_gil)
    spdlog::info("gil: pid {}: hook take_gil: uprobe+uretprobe on {} in {} ({})", pid, fmt::join(where, ", "),
                 plan.shown_binary, plan.why);
  else
    spdlog::info(
        "gil: pid {}: hook cond_wait: uprobe+uretprobe on {} in {}, kept when waiting on the GIL's "
        "condition variable ({})",
        pid, fmt::join(where, ", "), plan.shown_binary, plan.why);
}

void GilTracker::scan_threads() {
  bpf::Link link(bpf_program__attach_iter(skel_->progs.gil_scan_threads, nullptr));
  if (!link) throw Error(errno_text("gil: attach task iterator", errno), "pyebpf needs Linux >= 5.8 (BPF iterators)");
  Fd fd(bpf_iter_create(link.fd()));
  if (!fd) throw Error(errno_text("gil: run task iterator", errno));
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
  }
  if (n < 0) throw Error(errno_text("gil: read task iterator", errno));
}

std::vector<int> GilTracker::wait_fds() const {
  std::vector<int> fds = BpfTracker::wait_fds();
  fds.push_back(stats_->timer_fd());
  return fds;
}

void GilTracker::consume() {
  BpfTracker::consume();
  if (stats_->due()) stats_->flush();
}

void GilTracker::finish() {
  if (stats_) stats_->flush();  // the partial last interval
}

void GilTracker::emit_stats(const pyebpf_event_header& hdr, const GilTotals& interval, double interval_s) {
  stats_record_.clear();
  set_thread_fields(stats_record_, decode_context(*ctx_), hdr);
  fill_gil_stats(interval, interval_s, stats_record_);
  ctx_->targets.count_event(static_cast<pid_t>(hdr.pid), stats_record_.metric());
  ctx_->sink.write(stats_record_);
}

void GilTracker::handle(const void* data, std::size_t size) {
  deliver(decoder_.decode(data, size, decode_context(*ctx_), record_), record_);
}

std::string GilTracker::summary_line() const {
  if (!skel_ || !stats_) return "gil: not started";
  Counters c = read_counters(skel_->maps.counters);
  const IntervalTotals& waits = stats_->run().waits;
  return fmt::format(
      "gil: {} hook hits, {} GIL waits ({:.3f} s in total, p50 {} ms, p99 {} ms, max {} ms) in {} gil_stats records, "
      "{} not counted (no gil_stats entry); {} at or above --gil-min-wait-ms ({} ms), {} emitted, {} below it, "
      "{} over --gil-max-events ({}/s, counted only), "
      "{} lost (ring buffer full){}, {} with unknown holder, {} holder threads unresolved, {} without stacks "
      "(below --gil-py-min-ms), {} partial stacks (memory read faults or looping frame chains), {} on "
      "subinterpreter GILs (not tracked), "
      "{} GIL state read faults, {} stale wait records, {} waits seen ending only at a later switch-out (no "
      "stacks)",
      c[PYEBPF_CNT_HITS], waits.count, static_cast<double>(waits.total_ns) / 1e9, waits.quantile_ms(0.5),
      waits.quantile_ms(0.99), ns_to_ms(waits.max_ns), stats_->records(), c[PYEBPF_GIL_CNT_NO_TOTALS],
      stats_->run().reported, options_.min_wait_ms, counts_.emitted, c[PYEBPF_CNT_FILTERED],
      c[PYEBPF_GIL_CNT_RATE_LIMITED], options_.max_events, c[PYEBPF_CNT_RINGBUF_FULL],
      malformed_note(counts_.malformed), c[PYEBPF_GIL_CNT_HOLDER_UNKNOWN],
      c[PYEBPF_GIL_CNT_HOLDER_NO_TID] - std::min(c[PYEBPF_GIL_CNT_HOLDER_NO_TID], decoder_.holders_resolved_late()),
      c[PYEBPF_GIL_CNT_STACKS_SKIPPED], c[PYEBPF_CNT_READ_FAULT] + c[PYEBPF_CNT_FRAME_LOOP],
      c[PYEBPF_GIL_CNT_OTHER_INTERP], c[PYEBPF_GIL_CNT_STATE_FAULT], c[PYEBPF_GIL_CNT_STALE],
      c[PYEBPF_GIL_CNT_END_UNSEEN]);
}

const TrackerDescriptor& gil_tracker() {
  static const TrackerDescriptor d{
      .name = "gil",
      .help = "GIL waits with holder and waiter stacks",
      .schemas = {&gil_wait_schema(), &gil_stats_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<GilOptions>();
        auto* gil = cli.add_option_group("gil", "GIL waits");
        flags::check(gil->add_option("--gil-min-wait-ms", o->min_wait_ms,
                                     fmt::format("gil_wait events (with both stacks) only for waits at least this "
                                                 "long, in ms (default {}; 0: every one); all are counted in gil_stats",
                                                 kGilDefaultMinWaitMs)),
                     flags::between(0, 3.6e6, "ms", "1"));
        flags::check(gil->add_option("--gil-max-events", o->max_events,
                                     fmt::format("Most gil_wait events per target and second; longer waits beyond it "
                                                 "are only counted in gil_stats (default {}; 0: no limit)",
                                                 kGilDefaultMaxEvents)),
                     flags::between(0, 1e9, "events per second", "1000"));
        flags::check(gil->add_option("--gil-stats-interval", o->stats_interval_s,
                                     "Seconds between gil_stats records (default 10; also at the end)"),
                     flags::between(1, 86400, "seconds", "10"));
        gil->add_flag("--gil-py-enable,!--no-gil-py-enable", o->py_enable,
                      "Walk the waiter's and the holder's Python stacks (default true; --gil-py-enable false disables)")
            ->expected(0, 1);
        flags::check(
            gil->add_option(
                "--gil-py-min-ms", o->py_min_ms,
                "Walk stacks only for waits at least this long; shorter ones report empty stacks (default 0.0)"),
            flags::between(0, 3.6e6, "ms", "5"));
        gil->add_option("--gil-hook", o->hook,
                        "Where to measure: sched (the scheduler's tracepoints: no probe in the target; Linux >= 6.16, "
                        "glibc), cond_wait (uprobes on libc pthread_cond_timedwait on the GIL: two traps per round "
                        "of a waiter), take_gil (uprobes on CPython's take_gil symbol: every acquisition), auto "
                        "(sched, else cond_wait, else take_gil; default)")
            ->check(CLI::IsMember({"auto", "sched", "cond_wait", "take_gil"}));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<GilTracker>(static_cast<const GilOptions&>(*o));
      },
      .report = make_gil_report,
      .flame_graphs = [](const TrackerOptions*) { return gil_flame_graphs(); },
      .top = [](const TrackerOptions*, const sinks::Record& r, live::Tally& tally) { gil_top(r, tally); },
  };
  return d;
}

}  // namespace pyebpf::trackers
