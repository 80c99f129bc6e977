// SPDX-License-Identifier: Apache-2.0
#include "trackers/py_stack.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>

#include "bpf/features.hpp"
#include "py_stack.h"
#include "py_stack.skel.h"
#include "pyebpf/error.hpp"
#include "python/stack_format.hpp"
#include "trackers/bpf_counters.hpp"
#include "trackers/event_fields.hpp"

namespace pyebpf::trackers {

void PyStackTracker::SkelDeleter::operator()(py_stack_bpf* skel) const noexcept {
  py_stack_bpf__destroy(skel);
}

PyStackTracker::PyStackTracker() = default;
PyStackTracker::~PyStackTracker() = default;

void PyStackTracker::start(TrackerContext& ctx) {
  ctx_ = &ctx;
  skel_.reset(py_stack_bpf__open());
  if (!skel_) throw Error(errno_text("py_stack: open BPF object", errno));
  skel_->rodata->targ_use_bpf_loop = bpf::kernel_has_bpf_loop();
  ctx.shared_maps.reuse_in(skel_->obj);
  if (int err = py_stack_bpf__load(skel_.get()))
    throw Error(errno_text("py_stack: load BPF object", -err), "run with -vv to see the verifier log");
  sampler_.emplace(skel_->progs.sample_python_stack, ctx.options.pystack_frequency);
  events_.emplace(
      skel_->maps.events, [this](const void* data, std::size_t size) { handle(data, size); }, "py_stack",
      std::chrono::milliseconds(PYEBPF_PY_STACK_POLL_MS));
  spdlog::info("py_stack: sampling at {} Hz with {} on {} CPUs", ctx.options.pystack_frequency, sampler_->event_name(),
               sampler_->cpus());
}

std::vector<int> PyStackTracker::wait_fds() const {
  return events_->wait_fds();
}

void PyStackTracker::consume() {
  events_->consume();
}

void PyStackTracker::handle(const void* data, std::size_t size) {
  if (size < PYEBPF_PY_STACK_EVENT_BYTES(0)) {
    ++malformed_;
    return;
  }
  pyebpf_py_stack_event ev{};
  std::memcpy(&ev, data, std::min(size, sizeof(ev)));
  auto* python = ctx_->targets.python(static_cast<pid_t>(ev.hdr.pid));
  if (!python) return;  // target already gone and forgotten
  auto stack = python::format_stack(python->symbolizer(), ev.stack, size - sizeof(ev.hdr));

  sinks::Event e = thread_event("py_stack", *ctx_, ev.hdr);
  e["stack"] = stack.text;
  e["stack_depth"] = stack.depth;
  e["leaf_func"] = stack.leaf.function;
  e["leaf_file"] = stack.leaf.file;
  e["leaf_line"] = stack.leaf.line;
  e["truncated"] = stack.truncated;
  if (ev.stack.status == PYEBPF_STACK_READ_FAULT) e["partial"] = true;
  ctx_->targets.count_event(static_cast<pid_t>(ev.hdr.pid));
  ctx_->sink.write(e);
  ++emitted_;
}

std::string PyStackTracker::summary() const {
  if (!skel_) return "py_stack: not started";
  Counters c = read_counters(skel_->maps.counters);
  return fmt::format(
      "py_stack: {} samples of target threads, {} emitted, {} lost (ring buffer full), {} without Python state, "
      "{} partial (memory read faults), {} truncated at {} frames",
      c[PYEBPF_CNT_HITS], emitted_, c[PYEBPF_CNT_RINGBUF_FULL] + malformed_, c[PYEBPF_CNT_NO_TSTATE],
      c[PYEBPF_CNT_READ_FAULT], c[PYEBPF_CNT_TRUNCATED], PYEBPF_MAX_FRAMES);
}

}  // namespace pyebpf::trackers
