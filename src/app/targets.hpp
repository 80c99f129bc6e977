// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pyebpf/fd.hpp"
#include "python/offsets.hpp"
#include "python/process.hpp"
#include "trackers/degradations.hpp"

namespace pyebpf::app {

struct Target {
  pid_t pid = 0;
  Fd pidfd;  // readable when the process exits
  std::string comm;
  std::unique_ptr<python::PythonProcess> python;  // kept after exit: its caches name late events
  std::uint64_t events = 0;
  bool exited = false;
  double exited_after_s = 0;
};

// The processes being profiled and what happened to each.
class Targets {
 public:
  // Attaches to every PID it can; one that cannot be profiled goes to
  // `degraded`. Throws pyebpf::Error (the first PID's reason) when none can.
  void attach(const std::vector<pid_t>& pids, const python::OffsetsTable& table, trackers::Degradations& degraded);

  python::PythonProcess* python(pid_t pid);
  void count_event(pid_t pid);
  std::vector<Target>& all() { return targets_; }
  const std::vector<Target>& all() const { return targets_; }
  std::size_t alive() const;
  // One line per target for the end-of-run summary.
  std::vector<std::string> summary_lines() const;

 private:
  std::vector<Target> targets_;
};

}  // namespace pyebpf::app
