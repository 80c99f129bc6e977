// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "python/offsets.hpp"
#include "trackers/common/degradations.hpp"
#include "trackers/common/tracker.hpp"

namespace pyebpf::app {

using trackers::Target;

// pidfd_open(pid); throws pyebpf::Error when `pid` does not exist.
Fd open_pidfd(pid_t pid);

// The processes being profiled and what happened to each.
class Targets : public trackers::TargetLookup {
 public:
  Targets();
  // Attaches to every PID it can; one that cannot be profiled goes to
  // `degraded`. Throws pyebpf::Error (the first PID's reason) when none can.
  void attach(const std::vector<pid_t>& pids, const python::OffsetsTable& table, trackers::Degradations& degraded);

  // The target `pid` would be, not yet added: its pidfd (`pidfd` when given,
  // moved only on success), comm and CPython process. The same for every
  // target, found at start or later. Throws pyebpf::Error when `pid` is gone
  // or cannot be profiled.
  // `fork_of`: the CPython state of the process `pid` is a fork of, which
  // has not exec'd since (its copy needs no reading).
  Target prepare(pid_t pid, const python::OffsetsTable& table, Fd* pidfd = nullptr,
                 const python::PythonProcess* fork_of = nullptr) const;
  Target& add(Target target);
  // The target `pid` is now, if it is traced and has not ended.
  Target* live(pid_t pid);

  const std::vector<Target>& all() const override { return targets_; }
  std::vector<Target>& all() { return targets_; }
  python::FrameResolver* frames(pid_t pid) override;
  std::optional<std::string> thread_name(pid_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                                         bool fresh) override;
  void count_event(pid_t pid, const std::string& metric) override;

  // Frees the CPython state (ELF symbols, caches) of all but the `keep`
  // targets that ended last: only their late events still need it, and a
  // server recycling workers for hours must not keep one per worker.
  void release_ended(std::size_t keep);

  std::size_t alive() const;
  // One line per target for the end-of-run summary, the workers of one
  // service (a -p or --name process and its descendants) after it.
  std::vector<std::string> summary_lines() const;

 private:
  python::PythonProcess* python(pid_t pid);
  std::string summary_line(const Target& t) const;

  std::uint64_t start_ns_;  // when the run started (CLOCK_MONOTONIC): summary times are relative to it

  std::vector<Target> targets_;
};

}  // namespace pyebpf::app
