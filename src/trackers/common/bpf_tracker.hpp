// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf_runtime/ring_buffer.hpp"
#include "bpf_runtime/skeleton.hpp"
#include "pyebpf/error.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/common/degradations.hpp"
#include "trackers/common/tracker.hpp"

namespace pyebpf::trackers {

// What every tracker built on one BPF object (`bpf/<name>.bpf.c`, skeleton
// `Skel`) shares: the object, its `events` ring buffer read into handle(),
// the runner's context, the counts of what the decoder handled, and the loop
// over the targets at start with the one failure policy every tracker has:
// a target it cannot trace is a "<tracker> disabled for pid N" degradation
// and the run goes on; with no target traced and some failed, start() fails
// with the first failure as the tracker's own.
template <typename Skel>
class BpfTracker : public Tracker {
 public:
  std::vector<int> wait_fds() const override { return events_ ? events_->wait_fds() : std::vector<int>{}; }
  void consume() override {
    if (events_) events_->consume();
  }
  std::uint64_t events_lost() const override {
    return skel_ ? read_counters(skel_->maps.counters)[PYEBPF_CNT_RINGBUF_FULL] : 0;
  }

 protected:
  using Skeleton = bpf::Skeleton<Skel>;

  // `owner` names the object in errors ("gil").
  BpfTracker(std::string owner, typename Skeleton::Functions functions)
      : owner_(std::move(owner)), functions_(functions) {}

  // start()'s first step: keeps the runner's context and opens the BPF
  // object, for the tracker to configure (rodata, map sizes) and load.
  void open(TrackerContext& ctx) {
    ctx_ = &ctx;
    skel_ = open_skeleton();
  }
  // A fresh, unloaded object (a tracker falling back to other hooks reopens).
  Skeleton open_skeleton() const { return Skeleton(owner_, functions_); }

  // Runs `attach` (add_target if empty) for every target alive now, under
  // the failure policy above.
  void add_targets(const std::function<void(const Target&)>& attach = {}) {
    TargetFailures failures;
    std::size_t traced = 0;
    for (const auto& t : ctx_->targets.all()) {
      if (t.exited) continue;
      try {
        attach ? attach(t) : add_target(t);
        ++traced;
      } catch (const Error& e) {
        failures.add(t.pid, t.python->name(), e);
      }
    }
    failures.settle(owner_, traced, ctx_->degraded);
  }

  // Reads the object's `events` ring buffer into handle(): woken by BPF, and
  // also drained about every `poll` if given (RingBuffer).
  void read_events(std::optional<std::chrono::milliseconds> poll = std::nullopt) {
    auto handler = [this](const void* data, std::size_t size) { handle(data, size); };
    if (poll)
      events_.emplace(skel_->maps.events, handler, owner_, *poll);
    else
      events_.emplace(skel_->maps.events, handler, owner_);
  }
  // One ring-buffer record.
  virtual void handle(const void* data, std::size_t size) = 0;
  // A record handle() decoded: counted for its target and written (trackers::deliver).
  void deliver(Decoded decoded, const sinks::Record& record) { trackers::deliver(decoded, record, *ctx_, counts_); }

  TrackerContext* ctx_ = nullptr;
  Skeleton skel_;
  std::optional<bpf::RingBuffer> events_;
  EventCounts counts_;

 private:
  std::string owner_;
  typename Skeleton::Functions functions_;
};

}  // namespace pyebpf::trackers
