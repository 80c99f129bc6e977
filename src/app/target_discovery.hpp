// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/lifecycle.hpp"
#include "app/name_pattern.hpp"
#include "app/targets.hpp"
#include "bpf_runtime/shared_maps.hpp"
#include "pyebpf/fd.hpp"
#include "python/offsets.hpp"

namespace pyebpf::app {

// Finds the processes to trace after start: the children the targets fork,
// the programs they exec, and processes whose command line matches --name.
// It turns the lifecycle events into targets (attached the same way as at
// start, then handed to the runner), retrying an exec'd process until its
// interpreter is up, and keeps --max-targets.
class Discovery {
 public:
  struct Callbacks {
    // A new target, attached and added to the targets: the runner registers it
    // with the BPF maps, its event loop and every tracker.
    std::function<void(Target&)> added;
    // A target whose address space is gone (exec): the runner delivers what
    // BPF captured from it, then forgets it everywhere. `how`: "exec'd into sh".
    std::function<void(Target&, const std::string& how)> ended;
    // Follows `pid` in BPF (ProcessLifecycle::track): its exec count.
    std::function<std::uint32_t(pid_t)> track;
  };

  Discovery(Targets& targets, const python::OffsetsTable& table, const bpf::SharedMaps& shared, const NamePattern* name,
            std::size_t max_targets, Callbacks callbacks);

  // Start: the processes --name matches now; each CPython one becomes a target.
  void scan_names(const std::vector<pid_t>& exclude);
  // A process that is followed for its descendants and execs (a target, or a
  // non-CPython process of a target's lineage).
  void follow(pid_t pid) { lineage_[pid] = pid; }
  // Start: the descendants `root` started before pyebpf (a server's
  // workers), CPython ones made targets of its service, the others followed.
  void adopt_descendants(pid_t root);

  void on_event(const LifecycleEvent& event);
  // Readable when a waiting process is due for another attach attempt.
  int timer_fd() const { return timer_.get(); }
  void retry_due();

  // False once nothing is traced, waited for or followed any more.
  bool active() const;
  std::vector<std::string> summary_lines() const;

 private:
  // A process to attach once it is CPython (an exec'd one may need a moment to
  // map and start its interpreter).
  struct Waiting {
    pid_t pid;
    pid_t parent;
    // A fork: the index in targets_.all() of the target it is a copy of.
    std::optional<std::size_t> copy_of;
    pid_t service;
    std::string origin;
    Fd pidfd;
    std::uint64_t event_ns;  // when BPF saw the fork or exec
    std::uint64_t first_ns;
    std::uint64_t next_ns;
    std::uint64_t delay_ns;
    std::string last_error;
  };

  void wait_for(pid_t pid, pid_t parent, pid_t service, std::string origin, std::uint64_t event_ns,
                std::uint64_t delay_ns, std::optional<std::size_t> copy_of = std::nullopt);
  void wait_for_early_children(const Target& parent);
  // One attach attempt: true when done with it (attached, refused or given up).
  bool attempt(Waiting& w);
  void arm_timer();
  bool at_limit();

  Targets& targets_;
  const python::OffsetsTable& table_;
  const bpf::SharedMaps& shared_;
  const NamePattern* name_;
  std::size_t max_targets_;
  Callbacks callbacks_;
  Fd timer_;
  std::vector<Waiting> waiting_;
  std::map<pid_t, pid_t> lineage_;  // process of a target's lineage, CPython or not -> its service (root) pid
  std::uint64_t refused_ = 0;
  std::uint64_t not_python_ = 0;
  std::uint64_t exited_before_attach_ = 0;
};

}  // namespace pyebpf::app
