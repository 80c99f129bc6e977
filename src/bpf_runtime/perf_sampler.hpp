// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>

#include <string>
#include <vector>

#include "bpf_runtime/handles.hpp"

namespace pyebpf::bpf {

// Attaches a perf_event BPF program to a sampling event on every online CPU.
// The event is the software CPU clock: it exists on every kernel and VM
// (hardware cycle counters are missing without a PMU) and its samples are
// proportional to on-CPU time, which is what a CPU profile should weigh.
class PerfSampler {
 public:
  // Throws pyebpf::Error naming the CPU and errno if an event cannot be opened.
  PerfSampler(bpf_program* prog, unsigned frequency_hz);

  std::size_t cpus() const { return links_.size(); }
  const std::string& event_name() const { return event_name_; }

 private:
  std::vector<Link> links_;  // each link owns its perf event fd
  std::string event_name_;
};

}  // namespace pyebpf::bpf
