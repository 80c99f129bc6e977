// SPDX-License-Identifier: Apache-2.0
#include "trackers/py_stack/py_stack.hpp"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "bpf_runtime/features.hpp"
#include "py_stack.h"
#include "py_stack.skel.h"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/py_stack/py_stack_events.hpp"
#include "util/flag_rules.hpp"

namespace pyebpf::trackers {

PyStackTracker::PyStackTracker(const PyStackOptions& options)
    : BpfTracker("py_stack", {py_stack_bpf__open, py_stack_bpf__load, py_stack_bpf__destroy}),
      options_(options),
      record_(py_stack_schema()) {}
PyStackTracker::~PyStackTracker() = default;

void PyStackTracker::start(TrackerContext& ctx) {
  open(ctx);
  skel_->rodata->targ_use_bpf_loop = bpf::walk_frames_with_bpf_loop();
  const int cpus = std::max(libbpf_num_possible_cpus(), 1);
  const std::uint32_t ring = bpf::ring_bytes_for(
      options_.frequency * cpus * double{PYEBPF_PY_STACK_EVENT_BYTES(PYEBPF_MAX_FRAMES)}, PYEBPF_PY_STACK_RING_S);
  bpf_map__set_max_entries(skel_->maps.events, ring);
  skel_->rodata->targ_wakeup_bytes = ring / 4;
  skel_.load(ctx.shared_maps);
  sampler_.emplace(skel_->progs.sample_python_stack, options_.frequency);
  read_events(std::chrono::milliseconds(PYEBPF_PY_STACK_POLL_MS));
  spdlog::info("py_stack: sampling at {} Hz with {} on {} CPUs, {} KiB ring buffer", options_.frequency,
               sampler_->event_name(), sampler_->cpus(), ring >> 10);
}

void PyStackTracker::handle(const void* data, std::size_t size) {
  const Decoded decoded = decode_py_stack(data, size, decode_context(*ctx_), record_);
  if (decoded == Decoded::Event && record_.has(py_stack_schema().partial)) ++partial_;
  deliver(decoded, record_);
}

std::string PyStackTracker::summary_line() const {
  if (!skel_) return "py_stack: not started";
  Counters c = read_counters(skel_->maps.counters);
  return fmt::format(
      "py_stack: {} samples of target threads, {} emitted, {} lost (ring buffer full){}, {} without Python state, "
      "{} partial ({} memory read faults, {} looping frame chains, the rest unreadable code objects), "
      "{} truncated at {} frames",
      c[PYEBPF_CNT_HITS], counts_.emitted, c[PYEBPF_CNT_RINGBUF_FULL], malformed_note(counts_.malformed),
      c[PYEBPF_CNT_NO_TSTATE], partial_, c[PYEBPF_CNT_READ_FAULT], c[PYEBPF_CNT_FRAME_LOOP], c[PYEBPF_CNT_TRUNCATED],
      PYEBPF_MAX_FRAMES);
}

const TrackerDescriptor& py_stack_tracker() {
  static const TrackerDescriptor d{
      .name = "py_stack",
      .help = "CPU profiler: Python stacks sampled in BPF",
      .schemas = {&py_stack_schema()},
      .add_options = [](CLI::App& cli) -> std::shared_ptr<TrackerOptions> {
        auto o = std::make_shared<PyStackOptions>();
        flags::check(cli.add_option_group("py_stack", "CPU profiler")
                         ->add_option("--pystack-frequency", o->frequency, "Samples per second per CPU (default 99)"),
                     flags::whole(1, 10000, "samples per second", "99"));
        return o;
      },
      .create = [](const TrackerOptions* o, const std::vector<std::string>&) -> std::unique_ptr<Tracker> {
        return std::make_unique<PyStackTracker>(static_cast<const PyStackOptions&>(*o));
      },
      .report = make_py_stack_report,
      .flame_graphs =
          [](const TrackerOptions* o) {
            return py_stack_flame_graphs(static_cast<const PyStackOptions&>(*o).frequency);
          },
      .top = [](const TrackerOptions* o, const sinks::Record& r,
                live::Tally& tally) { py_stack_top(static_cast<const PyStackOptions&>(*o).frequency, r, tally); },
  };
  return d;
}

}  // namespace pyebpf::trackers
