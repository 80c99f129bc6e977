// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "bpf_runtime/ring_buffer.hpp"
#include "bpf_runtime/shared_maps.hpp"
#include "bpf_runtime/skeleton.hpp"
#include "lifecycle.h"

struct lifecycle_bpf;

namespace pyebpf::app {

// One fork, exec or exit bpf/lifecycle.bpf.c reported.
struct LifecycleEvent {
  pyebpf_lifecycle_kind kind;
  pid_t pid;
  pid_t parent;  // fork only
  bool tracked;  // a target or a target's descendant
  bool needle;   // exec whose command line holds the --name needle
  std::uint64_t ts_ns;
  std::string comm;
};

// The BPF side of following processes (bpf/lifecycle.bpf.c): the lineage map
// of targets and their descendants, and the events of their forks, execs and
// exits. Loaded once per run, before the trackers.
class ProcessLifecycle {
 public:
  using Handler = std::function<void(const LifecycleEvent&)>;

  // `needle`: the --name prefilter ("" without --name); `all_execs`: --name
  // without a needle, every exec goes to user space.
  ProcessLifecycle(const bpf::SharedMaps& shared, bool follow_children, const std::string& needle, bool all_execs,
                   Handler handler);
  ~ProcessLifecycle();

  // Follows `pid`'s forks and execs from now on (if not yet); returns how
  // many execs of it BPF has seen: a process whose count changed while it was
  // being attached exec'd meanwhile.
  std::uint32_t track(pid_t pid) const;
  // Stops following `pid` (a refused or exited process).
  void untrack(pid_t pid) const;
  int wait_fd() const;
  // Delivers what BPF reported so far; call before consuming any tracker, so a
  // target is known before the events it caused.
  void consume();
  std::string summary() const;

 private:
  void handle(const void* data, std::size_t size);

  bpf::Skeleton<lifecycle_bpf> skel_;
  std::vector<bpf::Link> links_;
  std::optional<bpf::RingBuffer> events_;
  Handler handler_;
  std::uint64_t malformed_ = 0;
};

}  // namespace pyebpf::app
