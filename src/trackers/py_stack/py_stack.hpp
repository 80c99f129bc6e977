// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <optional>

#include "bpf_runtime/perf_sampler.hpp"
#include "bpf_runtime/ring_buffer.hpp"
#include "bpf_runtime/skeleton.hpp"
#include "trackers/common/descriptor.hpp"

struct py_stack_bpf;

namespace pyebpf::trackers {

struct PyStackOptions : TrackerOptions {
  unsigned frequency = 99;  // Hz
};

// CPU profiler: samples the Python stacks of target threads on CPU at
// --pystack-frequency and emits one `py_stack` event per sample.
class PyStackTracker : public Tracker {
 public:
  explicit PyStackTracker(const PyStackOptions& options);
  ~PyStackTracker() override;

  const char* name() const override { return "py_stack"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  std::vector<std::string> summary() const override { return {summary_line()}; }

 private:
  std::string summary_line() const;
  void handle(const void* data, std::size_t size);

  const PyStackOptions options_;
  TrackerContext* ctx_ = nullptr;
  bpf::Skeleton<py_stack_bpf> skel_;
  std::optional<bpf::PerfSampler> sampler_;
  std::optional<bpf::RingBuffer> events_;
  sinks::Record record_;
  EventCounts counts_;
  std::uint64_t partial_ = 0;  // emitted stacks marked partial (add_python_stack)
};

}  // namespace pyebpf::trackers
