// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pyebpf::sinks {

// What a run was: stored with its events (SQLite) and heading its report.
struct RunInfo {
  std::string env;
  std::string host;
  std::string version;       // pyebpf's
  std::string command_line;  // secrets redacted
  std::vector<long> pids;
  std::int64_t started_us = 0;  // epoch µs
};

// How it ended: the end-of-run lines pyebpf printed (what each tracker saw
// and lost, each target's fate, what each sink wrote and dropped).
struct RunEnd {
  std::int64_t ended_us = 0;
  double duration_s = 0;
  std::string stop_reason;
  std::vector<std::string> summary_lines;  // without the "pyebpf: " prefix
};

}  // namespace pyebpf::sinks
