// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "bpf/handles.hpp"
#include "bpf/ring_buffer.hpp"
#include "trackers/request_queue.hpp"
#include "trackers/tracker.hpp"

struct handoff_bpf;

namespace pyebpf::trackers {

// Server request queue time: one `handoff` event per connection picked up by a
// worker thread (gunicorn gthread, uwsgi-style accept handoff), and every
// --rq-interval seconds one `request_queue` summary per target process.
class HandoffTracker : public Tracker {
 public:
  HandoffTracker();
  ~HandoffTracker() override;

  const char* name() const override { return "handoff"; }
  void start(TrackerContext& ctx) override;
  std::vector<int> wait_fds() const override;
  void consume() override;
  void tick() override;
  std::string summary() const override;

 private:
  struct Backlog {
    std::uint64_t count = 0;
    std::uint64_t oldest_ns = 0;  // queue time of the oldest entry, 0 if none
  };
  struct PerProcess {
    HandoffTotals last;            // cumulative counters at the last summary
    std::uint64_t queued_max = 0;  // max of the per-second backlog samples this interval
    std::uint32_t container_pid = 0;
  };

  // Hooks one process (its C library's accept/epoll_ctl/recv*/read*/close);
  // a process that cannot be hooked is a warning and a summary line.
  void attach_process(pid_t pid);
  void handle(const void* data, std::size_t size);
  std::map<std::uint32_t, Backlog> backlog();
  std::optional<HandoffTotals> totals(std::uint32_t pid) const;
  std::uint64_t workers_since(std::uint32_t pid, std::uint64_t since_ns) const;
  void emit_request_queue(std::uint32_t pid, PerProcess& p, const Backlog& now_backlog, std::uint64_t now_ns);

  struct SkelDeleter {
    void operator()(handoff_bpf* skel) const noexcept;
  };
  TrackerContext* ctx_ = nullptr;
  std::unique_ptr<handoff_bpf, SkelDeleter> skel_;
  std::map<pid_t, std::vector<bpf::Link>> process_links_;
  std::optional<bpf::RingBuffer> events_;
  std::map<std::uint32_t, PerProcess> procs_;
  std::uint64_t interval_start_ns_ = 0;
  std::uint64_t emitted_ = 0;
  std::uint64_t summaries_ = 0;
  std::uint64_t malformed_ = 0;
  std::uint64_t unhooked_ = 0;
};

}  // namespace pyebpf::trackers
