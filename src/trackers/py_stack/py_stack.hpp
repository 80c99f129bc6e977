// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <optional>

#include "bpf_runtime/perf_sampler.hpp"
#include "trackers/common/bpf_tracker.hpp"
#include "trackers/common/descriptor.hpp"

struct py_stack_bpf;

namespace pyebpf::trackers {

struct PyStackOptions : TrackerOptions {
  unsigned frequency = 99;  // Hz
};

// CPU profiler: samples the Python stacks of target threads on CPU at
// --pystack-frequency and emits one `py_stack` event per sample.
class PyStackTracker : public BpfTracker<py_stack_bpf> {
 public:
  explicit PyStackTracker(const PyStackOptions& options);
  ~PyStackTracker() override;

  const char* name() const override { return "py_stack"; }
  void start(TrackerContext& ctx) override;
  std::vector<std::string> summary() const override { return {summary_line()}; }

 private:
  std::string summary_line() const;
  void handle(const void* data, std::size_t size) override;

  const PyStackOptions options_;
  std::optional<bpf::PerfSampler> sampler_;
  sinks::Record record_;
  std::uint64_t partial_ = 0;  // emitted stacks marked partial (add_python_stack)
};

}  // namespace pyebpf::trackers
