// SPDX-License-Identifier: Apache-2.0
#include "trackers/gc/gc.hpp"

#include <bpf/bpf.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <thread>

#include "bpf_runtime/detach.hpp"
#include "bpf_runtime/features.hpp"
#include "bpf_runtime/uprobe_links.hpp"
#include "gc.skel.h"
#include "pyebpf/error.hpp"
#include "python/process.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/gc/gc_events.hpp"
#include "trackers/gil/gil.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/flag_rules.hpp"
#include "util/text.hpp"
#include "util/timer.hpp"

namespace pyebpf::trackers {
namespace {

std::string who(const python::PythonProcess& python) {
  return fmt::format("pid {} ({})", python.pid(), python.name());
}

bool collector_calls_callbacks(const python::PyVersion& version) {
  // 3.13 moved the gc.callbacks invocations into gc_collect_main itself;
  // before, gc_collect_with_callback / collect_with_callback wrapped it.
  return version.major == 3 && version.minor >= 13;
}

std::uint16_t fit(std::uint64_t value, const std::string& name) {
  if (value >= PYEBPF_NO_OFFSET) throw Error(name + " does not fit the gc tracker's 16-bit offsets");
  return static_cast<std::uint16_t>(value);
}

std::uint64_t required_size(const python::OffsetsRow& row, const std::string& type) {
  auto size = row.size(type);
  if (!size) throw Error("offsets row " + row.label + " has no sizeof(" + type + ")");
  return *size;
}

// gc.bpf.c copies the totals from spans of at most PYEBPF_GC_TOTALS_WINDOW
// bytes read at once, masking every offset into them: `span` must fit, and
// each field must lie within its entry.
void check_totals_span(const python::OffsetsRow& row, const pyebpf_gc_proc& cfg, std::uint64_t span) {
  if (std::max({cfg.collections, cfg.collected, cfg.uncollectable}) + 8U > cfg.entry_size)
    throw Error("offsets row " + row.label + ": a gc_generation_stats field lies past its struct's size");
  if (span > PYEBPF_GC_TOTALS_WINDOW)
    throw Error(fmt::format("offsets row {}: the gc totals span {} bytes, more than the {} gc.bpf.c reads at once",
                            row.label, span, PYEBPF_GC_TOTALS_WINDOW));
}

// A generation's list head: a circular doubly-linked list of PyGC_Head
// ({_gc_next, _gc_prev}; the low two bits of either may be flags), empty when
// it points at itself, else linked to objects that link back to it. While a
// collection runs, the objects' _gc_prev hold reference counts instead of
// pointers (3.8+: update_refs), so only the last object's _gc_next is sure to
// point back: one direction is enough. The target changes the lists at every
// allocation and a collection splices them, so a torn read proves nothing:
// tries spread over ~100 ms must see the head consistent once.
bool list_head_is_consistent(const python::ProcessMemory& memory, std::uint64_t head) {
  constexpr std::uint64_t kFlags = 3;
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto next = memory.read_u64(head);
    auto prev = memory.read_u64(head + 8);
    if (!next || !prev) return false;
    if (*next == head && *prev == head) return true;
    auto back = memory.read_u64((*next & ~kFlags) + 8);
    auto forth = memory.read_u64(*prev & ~kFlags);
    if ((back && (*back & ~kFlags) == head) || (forth && (*forth & ~kFlags) == head)) return true;
  }
  return false;
}

}  // namespace

std::optional<GcHookChoice> parse_gc_hook(const std::string& text) {
  if (text == "auto") return GcHookChoice::Auto;
  if (text == "usdt") return GcHookChoice::Usdt;
  if (text == "uprobe") return GcHookChoice::Uprobe;
  return std::nullopt;
}

std::string gc_collector_name(const python::PyVersion& version) {
  return version.major == 3 && version.minor <= 9 ? "collect" : "gc_collect_main";
}

GcHookPlan plan_gc_hooks(const binary::ElfFile& elf, const python::PyVersion& version, GcHookChoice choice) {
  GcHookPlan plan;
  auto start = elf.usdt_probe("python", "gc__start");
  auto done = elf.usdt_probe("python", "gc__done");
  const std::string collector = gc_collector_name(version);

  if (choice != GcHookChoice::Uprobe && start && done) {
    plan.kind = GcHookPlan::Kind::Usdt;
    plan.start = start;
    plan.done = done;
    plan.description = fmt::format(
        "USDT python:gc__start at {} and python:gc__done at {} (semaphores {} and {}); a pause spans the "
        "collection proper, without gc.callbacks",
        hex(start->pc), hex(done->pc), hex(start->semaphore), hex(done->semaphore));
    return plan;
  }
  if (choice != GcHookChoice::Usdt) {
    for (const auto& sym : elf.function_entries(collector)) {
      if (!elf.file_offset(sym.value)) continue;  // not in a loaded segment: nothing to probe
      plan.functions.push_back(sym);
      // The unmodified function takes the PyThreadState* first from 3.9 on
      // (3.8: the runtime's GC state); clones may have dropped parameters.
      plan.arg0_is_tstate.push_back(sym.name == collector && version.major == 3 && version.minor >= 9);
    }
    if (!plan.functions.empty()) {
      plan.kind = GcHookPlan::Kind::Uprobe;
      std::vector<std::string> names;
      for (const auto& sym : plan.functions) names.push_back(sym.name + " at " + hex(sym.value));
      plan.description =
          fmt::format("uprobe + uretprobe on {}; a pause spans the whole call, {} gc.callbacks", fmt::join(names, ", "),
                      collector_calls_callbacks(version) ? "including" : "without");
      return plan;
    }
  }

  const std::string no_usdt = "no python:gc__start/gc__done USDT probes (built without --with-dtrace)";
  const std::string no_symbol = "no symbol " + collector + " (.symtab stripped)";
  switch (choice) {
    case GcHookChoice::Usdt:
      plan.missing = "--gc-hook usdt, but the interpreter has " + no_usdt;
      plan.hint = "use --gc-hook auto to let pyebpf pick the hook this build has";
      break;
    case GcHookChoice::Uprobe:
      plan.missing = "--gc-hook uprobe, but the interpreter has " + no_symbol;
      plan.hint = "use --gc-hook auto to let pyebpf pick the hook this build has";
      break;
    case GcHookChoice::Auto:
      plan.missing = "the interpreter has " + no_usdt + " and " + no_symbol + ", so its collections cannot be seen";
      plan.hint =
          "profile a CPython built with --with-dtrace (Debian/Ubuntu packages are) or with an unstripped "
          "interpreter binary/libpython";
      break;
  }
  return plan;
}

pyebpf_gc_proc gc_totals_layout(const python::OffsetsRow& row) {
  pyebpf_gc_proc cfg{};
  cfg.entry_size = fit(required_size(row, "struct gc_generation_stats"), "sizeof(struct gc_generation_stats)");
  cfg.collections = fit(row.require("gcstats.collections"), "gcstats.collections");
  cfg.collected = fit(row.require("gcstats.collected"), "gcstats.collected");
  cfg.uncollectable = fit(row.require("gcstats.uncollectable"), "gcstats.uncollectable");
  if (auto rings = row.field("gc.stats_rings")) {
    cfg.stats = fit(*rings, "gc.stats_rings");
    cfg.stats_pointer = 1;
    if (row.array_length("gcrings.old") != PYEBPF_GC_GENERATIONS - 1)
      throw Error("offsets row " + row.label + ": struct gc_stats does not have one old ring per older generation");
    const std::uint64_t young = row.require("gcrings.young"), old = row.require("gcrings.old");
    const std::uint64_t young_items = row.require("gcring_young.items"), old_items = row.require("gcring_old.items");
    const std::uint64_t old_size = required_size(row, "struct gc_old_stats_buffer");
    cfg.gen[0] = {fit(young + young_items, "gcrings.young"),
                  fit(row.require("gcring_young.index") - young_items, "gcring_young.index"),
                  fit(row.array_length("gcring_young.items").value_or(0), "young ring"), 0};
    for (int g = 1; g < PYEBPF_GC_GENERATIONS; ++g) {
      cfg.gen[g] = {fit(old + (g - 1) * old_size + old_items, "gcrings.old"),
                    fit(row.require("gcring_old.index") - old_items, "gcring_old.index"),
                    fit(row.array_length("gcring_old.items").value_or(0), "old ring"), 0};
    }
    check_totals_span(row, cfg, cfg.entry_size);
    return cfg;
  }
  cfg.stats = fit(row.require("gc.generation_stats"), "gc.generation_stats");
  if (row.array_length("gc.generation_stats") != PYEBPF_GC_GENERATIONS)
    throw Error("offsets row " + row.label + ": generation_stats does not have one entry per generation");
  for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g)
    cfg.gen[g] = {fit(g * cfg.entry_size, "gc.generation_stats"), PYEBPF_NO_OFFSET, 1, 0};
  const std::uint64_t span = PYEBPF_GC_GENERATIONS * std::uint64_t{cfg.entry_size};
  check_totals_span(row, cfg, span);
  cfg.totals_bytes = static_cast<std::uint8_t>(span);
  return cfg;
}

void check_gc_state(const python::OffsetsRow& row, const python::ProcessMemory& memory, const pyebpf_gc_proc& cfg) {
  if (std::find(row.moved_by_target.begin(), row.moved_by_target.end(), "sizeof(struct _gc_runtime_state)") !=
      row.moved_by_target.end())
    throw Error("the target's sizeof(struct _gc_runtime_state) (from its _Py_DebugOffsets) differs from offsets row " +
                row.label + "'s, so its GC state has another layout");
  // generation0 == &generations[0] in every version that has both.
  const std::uint64_t generations = cfg.gcstate + row.require("gc.generations");
  if (auto g0 = row.field("gc.generation0")) {
    auto value = memory.read_u64(cfg.gcstate + *g0);
    if (!value || *value != generations)
      throw Error(fmt::format("gc.generation0 at {} is {}, not &generations[0] = {}", hex(cfg.gcstate + *g0),
                              value ? hex(*value) : std::string("unreadable"), hex(generations)));
  }
  const auto generation_size = required_size(row, "struct gc_generation");
  int unreadable = -1;
  const std::optional<GcReading> reading = read_gc_counters(memory, {cfg, std::nullopt}, &unreadable);
  for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g) {
    if (!list_head_is_consistent(memory, generations + g * generation_size))
      throw Error(
          fmt::format("gc.generations[{}] at {} is not a GC list head", g, hex(generations + g * generation_size)));
    const pyebpf_gc_gen_stats* totals = reading ? &reading->gen[g] : nullptr;
    if (!reading && g < unreadable) continue;  // readable: the one named below is not
    if (!totals || totals->collections < 0 || totals->collected < 0 || totals->uncollectable < 0 ||
        totals->collections > (std::int64_t{1} << 40))
      throw Error(fmt::format(
          "the totals of generation {} ({}) are {}", g, cfg.stats_pointer ? "gc.stats_rings" : "gc.generation_stats",
          totals ? fmt::format("collections {}, collected {}", totals->collections, totals->collected)
                 : std::string("unreadable")));
  }
}

pyebpf_gc_proc gc_proc_config(const python::PythonProcess& python) {
  const auto& row = python.offsets();
  const auto& memory = python.objects().memory();
  pyebpf_gc_proc cfg = gc_totals_layout(row);
  const std::uint64_t runtime = python.bpf_config().runtime;
  if (auto runtime_gc = row.field("runtime.gc")) {
    // 3.8: one GC state for the whole runtime.
    cfg.gcstate = runtime + *runtime_gc;
    cfg.tstate_interp = PYEBPF_NO_OFFSET;
    cfg.interp_gc = PYEBPF_NO_OFFSET;
  } else {
    cfg.interp_gc = fit(row.require("interp.gc"), "interp.gc");
    cfg.tstate_interp = fit(row.require("tstate.interp"), "tstate.interp");
    auto main = memory.read_u64(runtime + row.require("runtime.interpreters_main"));
    if (!main || !*main) throw Error("no main interpreter in _PyRuntime yet");
    cfg.gcstate = *main + cfg.interp_gc;
  }
  try {
    check_gc_state(row, memory, cfg);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (offsets row " + row.label + ")",
                "please report this build: its GC state layout is not the one pyebpf knows");
  }
  cfg.collecting = fit(row.require("gc.collecting"), "gc.collecting");
  try {
    // Only the sampler's "is the sampled thread the collector" test needs
    // it; without it `collecting` alone decides (gc.bpf.c).
    cfg.gil = find_gil(python);
    cfg.gil_locked = fit(row.require("gil.locked"), "gil.locked");
    cfg.gil_holder = fit(row.require("gil.last_holder"), "gil.last_holder");
  } catch (const Error& e) {
    cfg.gil = 0;
    spdlog::debug("gc: {}: GIL not found ({}); a sample counts as GC whenever a collection runs", who(python),
                  e.what());
  }
  return cfg;
}

GcCounterLayout gc_counter_layout(const python::PythonProcess& python) {
  GcCounterLayout layout{gc_proc_config(python), std::nullopt};
  if (auto duration = python.offsets().field("gcstats.duration")) {
    if (*duration + 8 > layout.cfg.entry_size)
      throw Error("offsets row " + python.offsets().label + ": gcstats.duration lies past its struct's size");
    layout.duration = static_cast<std::uint16_t>(*duration);
  }
  return layout;
}

std::optional<GcPauses> parse_gc_pauses(const std::string& text) {
  if (text == "auto") return GcPauses::Auto;
  if (text == "on") return GcPauses::On;
  if (text == "off") return GcPauses::Off;
  return std::nullopt;
}

namespace {

// A choice option's value, or a clear error: the CLI checks the choices, but
// a tracker built from other options (tests, a stored configuration) must not
// fall back silently.
template <typename Choice>
Choice chosen(std::optional<Choice> choice, const char* flag, const std::string& text, const char* choices) {
  if (!choice)
    throw Error(std::string(flag) + " " + text + ": not a known choice", std::string("use one of ") + choices);
  return *choice;
}

}  // namespace

GcTracker::GcTracker(const GcOptions& options)
    : BpfTracker("gc", {gc_bpf__open, gc_bpf__load, gc_bpf__destroy}),
      options_(options),
      pauses_(chosen(parse_gc_pauses(options.pauses), "--gc-pauses", options.pauses, "auto, on, off")),
      hook_(chosen(parse_gc_hook(options.hook), "--gc-hook", options.hook, "auto, usdt, uprobe")),
      record_(gc_pause_schema()),
      stats_record_(gc_stats_schema()),
      cpu_record_(gc_cpu_schema()) {}
GcTracker::~GcTracker() = default;

void GcTracker::start(TrackerContext& ctx) {
  open(ctx);
  skel_->rodata->targ_min_ns = static_cast<__u64>(options_.min_ms * 1e6);
  skel_->rodata->targ_py_stack = options_.py_enable;
  skel_->rodata->targ_use_bpf_loop = bpf::walk_frames_with_bpf_loop();
  // Per-collection events only at or above the threshold need a small ring
  // (256 KiB: ~120 events with full stacks, i.e. >= 120 ms of back-to-back
  // collections while the reader is away; a ring's pages count twice in
  // RSS); an event for every collection (--gc-min-ms 0) needs room for
  // thousands per second with stacks.
  bpf_map__set_max_entries(skel_->maps.events, options_.min_ms > 0 ? 256 << 10 : 8 << 20);
  // USDT and uprobe programs both stay loaded: a process found later (another
  // CPython build) may need the hook the targets at start do not.
  skel_.load(ctx.shared_maps);
  stats_.emplace("gc", skel_->maps.gc_stats, &skel_->bss->stats_epoch, options_.stats_interval_s,
                 [this](const auto& key, const auto& hdr, const GcTotals& interval, double) {
                   timed_[{key.pid, key.generation}] = {hdr, interval};
                 });
  samples_.emplace(skel_->maps.gc_samples);
  if (options_.sample_hz) sampler_.emplace(skel_->progs.gc_sample, options_.sample_hz);
  check_timer_ = make_timer(std::chrono::seconds(1), std::chrono::seconds(1));
  interval_start_ns_ = monotonic_ns();

  add_targets();
  spdlog::info(
      "gc: collections counted from the interpreter's own counters, gc_stats every {} s; {}; pauses timed one by one "
      "{}; gc_pause events for collections >= {} ms",
      options_.stats_interval_s,
      sampler_ ? fmt::format("GC's share of CPU from {} Hz {} samples", options_.sample_hz, sampler_->event_name())
               : std::string("no GC share of CPU (--gc-sample-hz 0)"),
      pauses_ == GcPauses::On ? "always (--gc-pauses on: two traps per collection)"
      : pauses_ == GcPauses::Off
          ? "never (--gc-pauses off)"
          : fmt::format("while a target collects <= {} times a second (--gc-pauses auto)", options_.pauses_max_rate),
      options_.min_ms);
  read_events();
}

void GcTracker::add_target(const Target& target) {
  // A reused pid: its last owner's interval goes first (as IntervalStats::add
  // does for BPF's entries, whose flush alone would drop them from timed_).
  if (auto old = targets_.find(target.pid); old != targets_.end() && old->second.gone) flush();
  const auto& python = *target.python;
  const auto& interp = python.interpreter();
  Traced t;
  t.python = &python;
  if (pauses_ != GcPauses::Off) {
    t.plan = plan_gc_hooks(interp.elf, interp.version, hook_);
    if (t.plan.kind == GcHookPlan::Kind::None) {
      // Where the user asked for probes (or for one hook), their absence is
      // an error; auto does without them.
      if (pauses_ == GcPauses::On || hook_ != GcHookChoice::Auto) throw Error(t.plan.missing, t.plan.hint);
      spdlog::info("gc: {}: collections counted but not timed one by one: {}", who(python), t.plan.missing);
    }
  }
  t.layout = gc_counter_layout(python);
  auto reading = read_gc_counters(python.objects().memory(), t.layout);
  if (!reading) throw Error("gc: the GC counters of " + who(python) + " cannot be read (has it exited?)");
  t.checked = t.interval_start = *reading;
  t.checked_ns = monotonic_ns();
  t.hdr.pid = t.hdr.tid = static_cast<__u32>(target.pid);
  t.hdr.ns_pid = t.hdr.ns_tid = container_pid_of(target.pid);
  std::strncpy(t.hdr.comm, target.comm.c_str(), sizeof(t.hdr.comm) - 1);

  __u32 key = static_cast<__u32>(target.pid);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.gc_procs), &key, &t.layout.cfg, BPF_ANY))
    throw Error(errno_text("gc: add pid " + std::to_string(target.pid) + " to gc_procs", errno));
  try {
    for (__u32 g = 0; g <= PYEBPF_GC_GEN_UNKNOWN; ++g) stats_->add({static_cast<__u32>(target.pid), g});
    samples_->add(target.pid);
    if (pauses_ == GcPauses::On) attach(target.pid, t);
  } catch (const Error&) {
    remove_target(target.pid);
    throw;
  }
  targets_[target.pid] = std::move(t);
  ++traced_;
}

void GcTracker::remove_target(pid_t pid) {
  __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.gc_procs), &key);
  bpf::detach_later(process_links_, pid);
  stats_->forget(pid);
  // Its last interval, up to the last check, goes out at the next flush.
  if (auto t = targets_.find(pid); t != targets_.end()) t->second.gone = true;
}

void GcTracker::attach(pid_t pid, Traced& t) {
  const auto& interp = t.python->interpreter();
  const std::string& binary = interp.open_path;
  if (t.plan.kind == GcHookPlan::Kind::Usdt) {
    // libbpf resolves the argument specs and arms the semaphores (through
    // the uprobe reference counter) for this process only.
    const std::pair<bpf_program*, const char*> probes[] = {{skel_->progs.gc_usdt_start, "gc__start"},
                                                           {skel_->progs.gc_usdt_done, "gc__done"}};
    for (const auto& [prog, probe] : probes) {
      bpf_link* link = bpf_program__attach_usdt(prog, pid, binary.c_str(), "python", probe, nullptr);
      if (!link)
        throw Error(errno_text(fmt::format("gc: attach USDT python:{} in {} (pid {})", probe, binary, pid), errno));
      process_links_[pid].emplace_back(link);
    }
  } else {
    std::vector<bpf::UprobeSite> sites;
    std::vector<std::string> where;
    for (std::size_t i = 0; i < t.plan.functions.size(); ++i) {
      const std::uint64_t offset = *interp.elf.file_offset(t.plan.functions[i].value);
      sites.push_back({.offset = offset, .cookie = t.plan.arg0_is_tstate[i] ? PYEBPF_GC_COOKIE_ARG0_TSTATE : 0U});
      where.push_back(fmt::format("{} (file offset {})", t.plan.functions[i].name, hex(offset)));
    }
    for (bool retprobe : {false, true}) {
      bpf_program* prog = retprobe ? skel_->progs.gc_collect_return : skel_->progs.gc_collect_entry;
      auto links = bpf::attach_process_uprobes(prog, pid, binary, sites, retprobe);
      if (links.empty())
        throw Error(errno_text(fmt::format("gc: attach {} {} to {} (pid {})", retprobe ? "uretprobe" : "uprobe",
                                           fmt::join(where, ", "), binary, pid),
                               errno));
      std::move(links.begin(), links.end(), std::back_inserter(process_links_[pid]));
    }
  }
  t.probes = true;
  ++t.attaches;
  spdlog::info("gc: {}: pauses timed one by one: {}", who(*t.python), t.plan.description);
}

void GcTracker::detach(pid_t pid, Traced& t) {
  bpf::detach_later(process_links_, pid);
  t.probes = false;
  t.calm_checks = 0;
  ++t.detaches;
}

// Every second: the counters of each target, whose growth is its collection
// rate. --gc-pauses auto takes the probes off a target above the max rate
// (at once: each of its collections pays two traps meanwhile) and puts them
// back after it stayed at or below half of it for kCalmChecks checks (once
// at the start, where nothing suggests otherwise).
void GcTracker::check_rates() {
  constexpr int kCalmChecks = 5;
  const std::uint64_t now = monotonic_ns();
  for (auto& [pid, t] : targets_) {
    if (t.gone) continue;
    auto reading = read_gc_counters(t.python->objects().memory(), t.layout);
    if (!reading) continue;  // exiting: the lifecycle tracker removes it
    const double seconds = static_cast<double>(now - t.checked_ns) / 1e9;
    const double rate =
        seconds > 0 ? static_cast<double>(reading->collections() - t.checked.collections()) / seconds : 0;
    t.checked = *reading;
    t.checked_ns = now;
    if (pauses_ != GcPauses::Auto || t.plan.kind == GcHookPlan::Kind::None) continue;
    if (t.probes && rate > options_.pauses_max_rate) {
      spdlog::info(
          "gc: {} collects {:.0f} times a second, above --gc-pauses-max-rate {}: its pauses are no longer "
          "timed one by one (counts and GC share go on)",
          who(*t.python), rate, options_.pauses_max_rate);
      detach(pid, t);
      continue;
    }
    if (t.probes) continue;
    t.calm_checks = rate <= options_.pauses_max_rate / 2 ? t.calm_checks + 1 : 0;
    if (t.calm_checks >= (t.attaches ? kCalmChecks : 1)) {
      try {
        attach(pid, t);
      } catch (const Error& e) {
        spdlog::warn("gc: {}: pauses not timed: {}", who(*t.python), e.what());
        t.plan.kind = GcHookPlan::Kind::None;
        bpf::detach_later(process_links_, pid);
      }
    }
  }
}

void GcTracker::flush() {
  // The interpreter's counters first, then BPF's timed pauses: a collection
  // that ends between the two reads is timed in this interval and counted
  // by the counters in the next (emit_interval moves it into this one).
  // --gc-pauses on counts from BPF alone: no read.
  if (pauses_ != GcPauses::On) {
    for (auto& [pid, t] : targets_) {
      std::optional<GcReading> now;
      if (!t.gone) now = read_gc_counters(t.python->objects().memory(), t.layout);
      t.interval_end = now ? *now : t.checked;
    }
  }
  timed_.clear();
  stats_->flush();  // BPF's timed pauses of the interval, into timed_
  const std::uint64_t now = monotonic_ns();
  const double seconds = static_cast<double>(now - interval_start_ns_) / 1e9;
  for (auto& [pid, t] : targets_) emit_interval(pid, t, seconds);
  interval_start_ns_ = now;
  std::erase_if(targets_, [&](const auto& entry) {
    if (entry.second.gone) samples_->remove(entry.first);
    return entry.second.gone;
  });
}

void GcTracker::emit_interval(pid_t pid, Traced& t, double interval_s) {
  const auto timed = [&](int g) -> const std::pair<pyebpf_event_header, GcTotals>* {
    auto it = timed_.find({static_cast<std::uint32_t>(pid), static_cast<std::uint32_t>(g)});
    return it == timed_.end() ? nullptr : &it->second;
  };
  // Records no BPF header names are the target's, as its samples see it.
  std::optional<GcSamples::Interval> samples;
  if (sampler_) samples = samples_->next_interval(pid);
  if (samples && samples->hdr.pid) t.hdr = samples->hdr;
  if (pauses_ == GcPauses::On) {
    // Every collection went through the probes: BPF's counts, as timed.
    for (int g = 0; g <= PYEBPF_GC_GEN_UNKNOWN; ++g)
      if (const auto* bpf = timed(g))
        emit_stats(bpf->first, g, bpf->second, bpf->second.count, std::nullopt, interval_s);
  } else {
    const GcReading& end = t.interval_end;
    for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g) {
      const GcGenerationDelta d = gc_delta(end, t.interval_start, g);
      const auto* bpf = timed(g);
      if (d.collections <= 0 && !bpf) continue;
      GcTotals interval;
      // Collections that ended between the counters' read and BPF's are
      // timed here and counted in the next interval: counted here instead.
      const std::uint64_t counted = static_cast<std::uint64_t>(std::max<std::int64_t>(d.collections, 0));
      const std::uint64_t ahead = std::min(t.counted_ahead[g], counted);
      t.counted_ahead[g] -= ahead;
      const std::uint64_t here = counted - ahead, timed_here = bpf ? bpf->second.pauses.count : 0;
      if (timed_here > here) t.counted_ahead[g] += timed_here - here;
      interval.count = std::max(here, timed_here);
      interval.collected = d.collected;
      interval.uncollectable = d.uncollectable;
      if (bpf) interval.pauses = bpf->second.pauses;
      emit_stats(bpf ? bpf->first : t.hdr, g, interval, bpf ? bpf->second.pauses.count : 0, d.duration_ms, interval_s);
    }
    t.interval_start = end;
  }
  if (samples && samples->samples) emit_cpu(pid, *samples, interval_s);
}

void GcTracker::emit_stats(const pyebpf_event_header& who_collected, int generation, const GcTotals& interval,
                           std::uint64_t timed, std::optional<double> duration_ms, double interval_s) {
  pyebpf_event_header hdr = who_collected;
  hdr.ts_ns = interval_start_ns_;
  stats_record_.clear();
  set_thread_fields(stats_record_, decode_context(*ctx_), hdr);
  fill_gc_stats(interval, timed, duration_ms, generation == PYEBPF_GC_GEN_UNKNOWN ? -1 : generation, interval_s,
                stats_record_);
  run_.merge(interval);
  ++records_;
  ctx_->targets.count_event(static_cast<pid_t>(hdr.pid), stats_record_.metric());
  ctx_->sink.write(stats_record_);
}

void GcTracker::emit_cpu(pid_t pid, const GcSamples::Interval& interval, double interval_s) {
  pyebpf_event_header hdr = interval.hdr;
  hdr.ts_ns = interval_start_ns_;
  cpu_record_.clear();
  set_thread_fields(cpu_record_, decode_context(*ctx_), hdr);
  fill_gc_cpu(interval.samples, interval.collecting, options_.sample_hz, interval_s, cpu_record_);
  run_samples_ += interval.samples;
  run_collecting_ += interval.collecting;
  ctx_->targets.count_event(pid, cpu_record_.metric());
  ctx_->sink.write(cpu_record_);
}

std::vector<int> GcTracker::wait_fds() const {
  std::vector<int> fds = BpfTracker::wait_fds();
  if (stats_) fds.push_back(stats_->timer_fd());
  if (check_timer_) fds.push_back(check_timer_.get());
  return fds;
}

void GcTracker::consume() {
  BpfTracker::consume();
  if (check_timer_ && expired(check_timer_)) check_rates();
  if (stats_ && stats_->due()) flush();
}

void GcTracker::finish() {
  if (stats_) flush();  // the partial last interval
}

void GcTracker::handle(const void* data, std::size_t size) {
  deliver(decode_gc_pause(data, size, decode_context(*ctx_), options_.py_enable, record_), record_);
}

std::vector<std::string> GcTracker::summary_lines() const {
  if (!skel_ || !stats_) return {"gc: not started"};
  Counters c = read_counters(skel_->maps.counters);
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "gc: {} collections in {} traced process(es), {} of them timed one by one ({:.1f} ms), "
      "in {} gc_stats records; GC ran in {} of {} samples of the targets' CPU ({:.1f} %)",
      run_.count, traced_, run_.pauses.count, ns_to_ms(run_.pauses.total_ns), records_, run_collecting_, run_samples_,
      run_samples_ ? 100.0 * static_cast<double>(run_collecting_) / static_cast<double>(run_samples_) : 0.0));
  std::vector<std::string> modes;
  for (const auto& [pid, t] : targets_) {
    if (t.plan.kind == GcHookPlan::Kind::None && pauses_ != GcPauses::Off)
      modes.push_back(fmt::format("pid {} never (no hook: {})", pid, t.plan.missing));
    else if (pauses_ == GcPauses::Auto)
      modes.push_back(fmt::format("pid {} {} now (attached {} times, detached {} times)", pid,
                                  t.probes ? "timed" : "not timed", t.attaches, t.detaches));
  }
  lines.push_back(fmt::format("gc: pauses timed one by one: {}{}{}",
                              pauses_ == GcPauses::On    ? "always (--gc-pauses on)"
                              : pauses_ == GcPauses::Off ? "never (--gc-pauses off)"
                                                         : fmt::format("while <= {} collections/s (--gc-pauses auto)",
                                                                       options_.pauses_max_rate),
                              modes.empty() ? "" : ": ", fmt::join(modes, "; ")));
  lines.push_back(fmt::format(
      "gc: {} gc_pause events emitted, {} below --gc-min-ms ({} ms), {} lost (ring buffer full){}, {} not counted (no "
      "gc_stats entry), {} starts not recorded (start map full), {} without counts (GC stats unreadable or another "
      "interpreter's), {} ends without a seen start (attached mid-collection), {} collector calls that collected "
      "nothing, {} nested calls",
      counts_.emitted, c[PYEBPF_CNT_FILTERED], options_.min_ms, c[PYEBPF_CNT_RINGBUF_FULL],
      malformed_note(counts_.malformed), c[PYEBPF_GC_CNT_NO_TOTALS], c[PYEBPF_GC_CNT_START_LOST],
      c[PYEBPF_GC_CNT_NO_STATS], c[PYEBPF_GC_CNT_UNMATCHED], c[PYEBPF_GC_CNT_NOOP], c[PYEBPF_GC_CNT_NESTED]));
  return lines;
}

const TrackerDescriptor& gc_tracker() {
  static const TrackerDescriptor d{
      .name = "gc",
      .help = "garbage collection pauses",
      .schemas = {&gc_pause_schema(), &gc_stats_schema(), &gc_cpu_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<GcOptions>();
        auto* gc = cli.add_option_group("gc", "Garbage-collection pauses");
        flags::check(gc->add_option("--gc-min-ms", o->min_ms,
                                    fmt::format("gc_pause events (with the stack) only for collections at least this "
                                                "long, in ms (default {}; 0: every one); all are counted in gc_stats",
                                                kGcDefaultMinMs)),
                     flags::zero_or_more("ms", "5"));
        flags::check(gc->add_option("--gc-stats-interval", o->stats_interval_s,
                                    "Seconds between gc_stats records (default 10; also at the end)"),
                     flags::between(1, 86400, "seconds", "10"));
        gc->add_option("--gc-py-enable", o->py_enable,
                       "Python stack of the code that triggered each collection: true or false (default true)");
        gc->add_flag("--no-gc-py-enable{false}", o->py_enable, "Same as --gc-py-enable false");
        gc->add_option("--gc-pauses", o->pauses,
                       "When to time collections one by one with a probe pair (two traps per collection in the "
                       "target): auto (default: while it collects at most --gc-pauses-max-rate times a second), "
                       "on (always; gc_pause events need it), off (counts and GC share only)")
            ->check(CLI::IsMember({"auto", "on", "off"}));
        flags::check(gc->add_option("--gc-pauses-max-rate", o->pauses_max_rate,
                                    fmt::format("--gc-pauses auto: collections per second above which the probes "
                                                "come off a target (default {})",
                                                kGcDefaultPausesMaxRate)),
                     flags::zero_or_more("collections per second", "200"));
        flags::check(gc->add_option("--gc-sample-hz", o->sample_hz,
                                    "CPU-clock samples per second that measure GC's share of the targets' CPU "
                                    "(gc_cpu records; default 99, 0: off)"),
                     flags::between(0, 10000, "Hz", "99"));
        gc->add_option("--gc-hook", o->hook,
                       "auto (default: USDT probes where the build has them, else uprobes), usdt, or uprobe")
            ->check(CLI::IsMember({"auto", "usdt", "uprobe"}));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<GcTracker>(static_cast<const GcOptions&>(*o));
      },
      .report = make_gc_report,
      .top = [](const TrackerOptions*, const sinks::Record& r, live::Tally& tally) { gc_top(r, tally); },
  };
  return d;
}

}  // namespace pyebpf::trackers
