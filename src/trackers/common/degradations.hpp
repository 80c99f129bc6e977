// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pyebpf/error.hpp"

namespace pyebpf::trackers {

// What could not be traced, and why: a tracker that cannot trace one target
// (or cannot start at all), or a target pyebpf cannot attach to, is reported
// here and the run goes on with the rest. Each entry is logged as a warning
// when it is added and repeated in the end-of-run summary.
class Degradations {
 public:
  // `tracker` "" for a target no tracker can trace; `pid` 0 for a whole tracker.
  void add(const std::string& tracker, pid_t pid, const std::string& reason, const std::string& hint = {});
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::vector<std::string> lines_;
};

// The targets a tracker could not trace, collected while it plans its
// targets and settled once it knows how many it can trace.
class TargetFailures {
 public:
  // `who`: how the target is named in messages, e.g. "CPython 3.14.10, /usr/bin/python3.14".
  void add(pid_t pid, const std::string& who, const Error& e);
  // With no target traced but some that failed, throws the first failure as the tracker's own
  // ("gc: pid 12 (CPython ...): reason"); else reports each to `degraded`.
  void settle(const std::string& tracker, std::size_t traced, Degradations& degraded) const;

 private:
  struct Failure {
    pid_t pid;
    std::string who;
    std::string what;
    std::string hint;
  };
  std::vector<Failure> failures_;
};

}  // namespace pyebpf::trackers
