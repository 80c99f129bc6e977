// SPDX-License-Identifier: Apache-2.0
#include "app/report_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "pyebpf/error.hpp"
#include "sinks/report.hpp"
#include "sinks/sqlite_store.hpp"
#include "util/clock.hpp"

namespace pyebpf::app {

int print_stored_report(const Options& options) {
  sinks::SqliteStore store(options.report_file, sinks::SqliteStore::Mode::Read);
  auto runs = store.runs();
  if (runs.empty()) throw Error(options.report_file + " holds no pyebpf run");
  const sinks::SqliteStore::StoredRun* run = &runs.back();
  if (options.report_run) {
    run = nullptr;
    for (const auto& r : runs) {
      if (r.run_id == options.report_run) run = &r;
    }
    if (!run) {
      throw Error(fmt::format("{} has no run {}", options.report_file, options.report_run),
                  fmt::format("runs in it: 1 to {}", runs.back().run_id));
    }
  }
  sinks::Report report;
  store.for_each_event(run->run_id, [&](const sinks::Event& e) { report.add(e); });

  std::string pids;
  for (long p : run->info.pids) pids += (pids.empty() ? "" : " ") + std::to_string(p);
  std::string out = fmt::format("pyebpf report: run {} of {} ({} runs): env {}, host {}, pids {}, started {}\n",
                                run->run_id, options.report_file, runs.size(), run->info.env, run->info.host, pids,
                                iso8601_utc(run->info.started_us));
  if (run->ended) {
    out += sinks::end_of_run_text(run->end.duration_s, run->end.stop_reason, run->end.summary_lines, &report);
  } else {
    out += "pyebpf: this run has not ended (still running, or pyebpf was killed): events stored so far\n\n";
    out += report.render();
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace pyebpf::app
