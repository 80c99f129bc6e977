// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "python/offsets.hpp"
#include "trackers/degradations.hpp"
#include "trackers/tracker.hpp"

namespace pyebpf::app {

using trackers::Target;

// The processes being profiled and what happened to each.
class Targets : public trackers::TargetLookup {
 public:
  // Attaches to every PID it can; one that cannot be profiled goes to
  // `degraded`. Throws pyebpf::Error (the first PID's reason) when none can.
  void attach(const std::vector<pid_t>& pids, const python::OffsetsTable& table, trackers::Degradations& degraded);

  const std::vector<Target>& all() const override { return targets_; }
  std::vector<Target>& all() { return targets_; }
  python::FrameResolver* frames(pid_t pid) override;
  std::optional<std::string> thread_name(pid_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                                         bool fresh) override;
  void count_event(pid_t pid) override;

  std::size_t alive() const;
  // One line per target for the end-of-run summary.
  std::vector<std::string> summary_lines() const;

 private:
  python::PythonProcess* python(pid_t pid);

  std::vector<Target> targets_;
};

}  // namespace pyebpf::app
