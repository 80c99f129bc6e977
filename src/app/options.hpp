// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "app/registry.hpp"

namespace pyebpf::app {

// Everything the command line sets. Defaults match the original tool's.
// Trackers' own flags live in their options structs.
struct Options {
  enum class Command { Profile, Report, Dump, Top };
  Command command = Command::Profile;

  std::vector<pid_t> pids;
  std::string name_pattern;     // -n/--name: command lines to trace, now and later (pgrep -f)
  bool follow_children = true;  // --no-children: only the processes named by -p/--name
  std::size_t max_targets = 256;
  std::string env;
  std::vector<std::string> enable;  // tracker names as given (empty: every implemented tracker)
  bool also_stdout = false;
  double duration_s = 0;     // 0: until Ctrl-C / SIGTERM / no target left
  int verbosity = 0;         // -v debug, -vv trace (libbpf and verifier output)
  std::string command_line;  // argv as given, secrets redacted (stored with --sqlite runs)

  // Outputs. stdout gets JSON lines unless another output is set (then only with --also-stdout).
  std::string sqlite_path;
  std::size_t sqlite_queue_max = 100000;
  std::string folded_path;
  std::string speedscope_path;
  std::string pprof_path;       // gzipped pprof profiles: CPU in FILE, the other kinds beside it
  std::string html_path;        // --flamegraph: one self-contained HTML page
  bool report = true;           // end-of-run report on stderr
  double flush_timeout_s = 10;  // at exit, time to deliver what the database sinks still hold

  std::string clickhouse_url;  // empty: no ClickHouse
  std::string clickhouse_user = "default";
  std::string clickhouse_password;  // or PYEBPF_CLICKHOUSE_PASSWORD; never logged
  std::string clickhouse_database = "default";
  std::size_t ch_batch_size = 5000;
  double ch_flush_interval_s = 30;
  std::size_t ch_queue_max = 100000;

  // `pyebpf report FILE [--run N]` (with flame-graph outputs: converts instead of printing)
  std::string report_file;
  long report_run = 0;  // 0: the latest run in the file

  // `pyebpf dump`: every thread of the targets now, as a table or (--json) JSON lines
  bool dump_json = false;

  // `pyebpf top`: the live view's refresh period
  double top_refresh_s = 1;

  // Each tracker's own options (trackers/<name>.hpp), filled by its flags.
  TrackerOptionsMap trackers;
};

}  // namespace pyebpf::app
