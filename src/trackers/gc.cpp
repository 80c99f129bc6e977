// SPDX-License-Identifier: Apache-2.0
#include "trackers/gc.hpp"

#include <bpf/bpf.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bpf/features.hpp"
#include "gc.skel.h"
#include "pyebpf/error.hpp"
#include "python/process.hpp"
#include "trackers/bpf_counters.hpp"
#include "trackers/gc_events.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {
namespace {

std::string hex(std::uint64_t v) {
  return fmt::format("{:#x}", v);
}

std::string who(const python::PythonProcess& python) {
  return fmt::format("pid {} (CPython {}, {})", python.pid(), python.interpreter().version.str(),
                     python.interpreter().mapped_path);
}

bool collector_calls_callbacks(const python::PyVersion& version) {
  // 3.13 moved the gc.callbacks invocations into gc_collect_main itself;
  // before, gc_collect_with_callback / collect_with_callback wrapped it.
  return version.major == 3 && version.minor >= 13;
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

pyebpf_gc_proc gc_proc_config(const python::PythonProcess& python) {
  const auto& row = python.offsets();
  const auto& memory = python.objects().memory();
  const std::string hint = "the GC state layout differs from offsets row " + row.minor + " (derived from " +
                           row.derived_from + "); please report this build";

  // gc.bpf.c reads struct gc_generation_stats[3] as three {collections,
  // collected, uncollectable} Py_ssize_t triples.
  if (row.size("struct gc_generation_stats") != sizeof(pyebpf_gc_gen_stats) ||
      row.field("gcstats.collections") != offsetof(pyebpf_gc_gen_stats, collections) ||
      row.field("gcstats.collected") != offsetof(pyebpf_gc_gen_stats, collected) ||
      row.field("gcstats.uncollectable") != offsetof(pyebpf_gc_gen_stats, uncollectable))
    throw Error(who(python) + ": struct gc_generation_stats in offsets row " + row.minor +
                    " is not the {collections, collected, uncollectable} the gc tracker reads",
                hint);

  pyebpf_gc_proc cfg{};
  auto fit = [&](std::uint32_t offset, const char* name) {
    if (offset >= PYEBPF_NO_OFFSET) throw Error(who(python) + ": offset of " + name + " too large for BPF", hint);
    return static_cast<std::uint16_t>(offset);
  };
  cfg.stats = fit(row.require("gc.generation_stats"), "gc.generation_stats");
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
    if (!main || !*main) throw Error(who(python) + ": no main interpreter in _PyRuntime yet", hint);
    cfg.gcstate = *main + cfg.interp_gc;
  }
  // Self-check before BPF trusts the address: generation0 points at
  // generations[0] in every version that has it.
  if (auto g0 = row.field("gc.generation0")) {
    auto value = memory.read_u64(cfg.gcstate + *g0);
    std::uint64_t expected = cfg.gcstate + row.require("gc.generations");
    if (!value || *value != expected)
      throw Error(who(python) + ": no GC state at " + hex(cfg.gcstate) + " (generation0 is " +
                      (value ? hex(*value) : std::string("unreadable")) + ", expected " + hex(expected) + ")",
                  hint);
  }
  return cfg;
}

GcTracker::GcTracker(const GcOptions& options) : options_(options), record_(gc_pause_schema()) {}
GcTracker::~GcTracker() = default;

void GcTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  skel_ = bpf::Skeleton<gc_bpf>("gc", {gc_bpf__open, gc_bpf__load, gc_bpf__destroy});
  skel_->rodata->targ_min_ns = static_cast<__u64>(options_.min_ms * 1e6);
  skel_->rodata->targ_py_stack = options_.py_enable;
  skel_->rodata->targ_use_bpf_loop = bpf::kernel_has_bpf_loop();
  // USDT and uprobe programs both stay loaded: a process found later (another
  // CPython build) may need the hook the targets at start do not.
  skel_.load(ctx.shared_maps);

  std::vector<Error> unusable;
  for (const auto& target : ctx.targets.all()) {
    if (target.exited) continue;
    try {
      add_target(target);
    } catch (const Error& e) {
      unusable.push_back(e);
    }
  }
  // Asked for by name: the run cannot do what was asked. Enabled only as one
  // of "all trackers": say so loudly and let the others run.
  if (traced_ == 0 && !unusable.empty() && ctx.named) throw unusable.front();
  for (const auto& e : unusable) spdlog::warn("{}; its collections are NOT traced (hint: {})", e.what(), e.hint());
  events_.emplace(
      skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "gc");
}

void GcTracker::add_target(const Target& target) {
  const auto& python = *target.python;
  const auto& interp = python.interpreter();
  GcHookPlan plan =
      plan_gc_hooks(interp.elf, interp.version, parse_gc_hook(options_.hook).value_or(GcHookChoice::Auto));
  if (plan.kind == GcHookPlan::Kind::None) throw Error("gc: " + who(python) + ": " + plan.missing, plan.hint);
  pyebpf_gc_proc config = gc_proc_config(python);
  __u32 key = static_cast<__u32>(target.pid);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.gc_procs), &key, &config, BPF_ANY))
    throw Error(errno_text("gc: add pid " + std::to_string(target.pid) + " to gc_procs", errno));
  try {
    attach(target.pid, interp.open_path, interp.elf, plan);
  } catch (const Error&) {
    remove_target(target.pid);
    throw;
  }
  ++traced_;
  spdlog::info("gc: {}: {}", who(python), plan.description);
}

void GcTracker::remove_target(pid_t pid) {
  __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.gc_procs), &key);
  process_links_.erase(pid);
}

void GcTracker::attach(pid_t pid, const std::string& binary, const binary::ElfFile& elf, const GcHookPlan& plan) {
  if (plan.kind == GcHookPlan::Kind::Usdt) {
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
    return;
  }
  for (std::size_t i = 0; i < plan.functions.size(); ++i) {
    const auto& sym = plan.functions[i];
    const std::uint64_t offset = *elf.file_offset(sym.value);
    for (bool retprobe : {false, true}) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts);
      opts.retprobe = retprobe;
      opts.bpf_cookie = plan.arg0_is_tstate[i] ? PYEBPF_GC_COOKIE_ARG0_TSTATE : 0;
      bpf_program* prog = retprobe ? skel_->progs.gc_collect_return : skel_->progs.gc_collect_entry;
      bpf_link* link = bpf_program__attach_uprobe_opts(prog, pid, binary.c_str(), offset, &opts);
      if (!link)
        throw Error(errno_text(fmt::format("gc: attach {} {} (file offset {}) to {} (pid {})",
                                           retprobe ? "uretprobe" : "uprobe", sym.name, hex(offset), binary, pid),
                               errno));
      process_links_[pid].emplace_back(link);
    }
  }
}

std::vector<int> GcTracker::wait_fds() const {
  if (!events_) return {};
  return events_->wait_fds();
}

void GcTracker::consume() {
  if (events_) events_->consume();
}

void GcTracker::handle(const void* data, std::size_t size) {
  deliver(decode_gc_pause(data, size, decode_context(*ctx_), options_.py_enable, record_), record_, *ctx_, counts_);
}

std::string GcTracker::summary_line() const {
  if (!skel_) return "gc: no target process could be traced (see the warnings above)";
  Counters c = read_counters(skel_->maps.counters);
  const std::uint64_t collections = c[PYEBPF_CNT_EVENTS] + c[PYEBPF_CNT_FILTERED] + c[PYEBPF_CNT_RINGBUF_FULL];
  return fmt::format(
      "gc: {} collections in {} traced process(es), {} emitted, {} below --gc-min-ms, {} lost (ring buffer full), "
      "{} starts not recorded (start map full), {} without counts (GC stats unreadable or another "
      "interpreter's), {} ends without a seen start (attached mid-collection), {} collector calls that collected "
      "nothing, {} nested calls",
      collections, traced_, counts_.emitted, c[PYEBPF_CNT_FILTERED], c[PYEBPF_CNT_RINGBUF_FULL] + counts_.malformed,
      c[PYEBPF_GC_CNT_START_LOST], c[PYEBPF_GC_CNT_NO_STATS], c[PYEBPF_GC_CNT_UNMATCHED], c[PYEBPF_GC_CNT_NOOP],
      c[PYEBPF_GC_CNT_NESTED]);
}

const TrackerDescriptor& gc_tracker() {
  static const TrackerDescriptor d{
      .name = "gc",
      .help = "garbage collection pauses",
      .schemas = {&gc_pause_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<GcOptions>();
        auto* gc = cli.add_option_group("gc", "Garbage-collection pauses");
        gc->add_option("--gc-min-ms", o->min_ms,
                       "Report only collections at least this long, in ms (default 0: every one); filtered in BPF")
            ->check(CLI::Validator(
                [](std::string& value) -> std::string {
                  char* end = nullptr;
                  double ms = std::strtod(value.c_str(), &end);
                  return end != value.c_str() && *end == '\0' && ms >= 0 ? "" : "must be 0 or more milliseconds";
                },
                "MS"));
        gc->add_option("--gc-py-enable", o->py_enable,
                       "Python stack of the code that triggered each collection: true or false (default true)");
        gc->add_flag("--no-gc-py-enable{false}", o->py_enable, "Same as --gc-py-enable false");
        gc->add_option("--gc-hook", o->hook,
                       "auto (default: USDT probes where the build has them, else uprobes), usdt, or uprobe")
            ->check(CLI::IsMember({"auto", "usdt", "uprobe"}));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<GcTracker>(static_cast<const GcOptions&>(*o));
      },
      .report = make_gc_report,
  };
  return d;
}

}  // namespace pyebpf::trackers
