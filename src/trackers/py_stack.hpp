// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <optional>

#include "bpf/handles.hpp"
#include "bpf/perf_sampler.hpp"
#include "bpf/ring_buffer.hpp"
#include "trackers/tracker.hpp"

struct py_stack_bpf;

namespace pyebpf::trackers {

// CPU profiler: samples the Python stacks of target threads on CPU at
// --pystack-frequency and emits one `py_stack` event per sample.
class PyStackTracker : public Tracker {
 public:
  PyStackTracker();
  ~PyStackTracker() override;

  const char* name() const override { return "py_stack"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  std::string summary() const override;

 private:
  void handle(const void* data, std::size_t size);

  struct SkelDeleter {
    void operator()(py_stack_bpf* skel) const noexcept;
  };
  TrackerContext* ctx_ = nullptr;
  std::unique_ptr<py_stack_bpf, SkelDeleter> skel_;
  std::optional<bpf::PerfSampler> sampler_;
  std::optional<bpf::RingBuffer> events_;
  std::uint64_t emitted_ = 0;
  std::uint64_t malformed_ = 0;
};

}  // namespace pyebpf::trackers
