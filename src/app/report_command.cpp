// SPDX-License-Identifier: Apache-2.0
#include "app/report_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "app/outputs.hpp"
#include "app/stored_events.hpp"
#include "pyebpf/error.hpp"
#include "sinks/report.hpp"
#include "sinks/sqlite_store.hpp"
#include "util/clock.hpp"

namespace pyebpf::app {

namespace {

bool wants_flame_graphs(const Options& o) {
  return !o.folded_path.empty() || !o.speedscope_path.empty() || !o.pprof_path.empty() || !o.html_path.empty();
}

// The tracker options the stored run had (py_stack's sample rate sets what
// a CPU sample weighs): its command line parsed again, or the defaults.
TrackerOptionsMap stored_tracker_options(const std::string& command_line, const Options& fallback) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at < command_line.size();) {
    auto end = command_line.find(' ', at);
    if (end == std::string::npos) end = command_line.size();
    if (end > at) words.push_back(command_line.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  int exit_code = 0;
  auto parsed = argv.empty() ? std::nullopt : parse_command_line(static_cast<int>(argv.size()), argv.data(), exit_code);
  if (parsed) return parsed->trackers;
  std::fprintf(stderr, "pyebpf report: the run's command line does not parse again: tracker defaults assumed\n");
  return fallback.trackers;
}

bool is_sqlite(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path, "check the path");
  char magic[16] = {};
  f.read(magic, sizeof(magic));
  return std::string(magic, sizeof(magic)) == std::string("SQLite format 3\0", 16);
}

// JSON lines as pyebpf prints them (a saved stdout): the report only, since
// the run's summary lines went to stderr.
int report_from_json_lines(const Options& options) {
  const std::string& path = options.report_file;
  std::ifstream f(path);
  StoredEvents report;
  if (wants_flame_graphs(options)) {
    // JSON lines do not say how the run was made: the tracker options are
    // this command's (defaults, or e.g. `pyebpf --pystack-frequency 199 report ...`).
    auto o = flame_graph_options(options, sinks::RunInfo{});
    o.title = "pyebpf " + path;
    report.flame_graphs = std::make_unique<sinks::FlameGraphSink>(std::move(o));
  }
  std::string line;
  std::size_t events = 0, bad = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto e = nlohmann::ordered_json::parse(line, nullptr, false);
    auto metric = e.is_object() ? e.find("metric") : e.end();
    if (e.is_discarded() || !e.is_object() || metric == e.end() || !metric->is_string()) {
      ++bad;
      continue;
    }
    ++events;
    report.add(e);
  }
  // A report of nothing would read as "the run saw nothing": say what the file is instead.
  if (events == 0) {
    throw Error(fmt::format("{} is neither a pyebpf SQLite file nor JSON lines of pyebpf events ({})", path,
                            bad ? fmt::format("{} lines, none a pyebpf event", bad) : "empty"),
                "give it the file --sqlite wrote, or pyebpf's saved stdout");
  }
  if (report.flame_graphs) {
    if (bad) std::fprintf(stderr, "pyebpf report: %zu lines skipped: not pyebpf events\n", bad);
    report.write_flame_graphs();
    return 0;
  }
  std::string out = fmt::format("pyebpf report: {} (JSON lines{})\n\n", path,
                                bad ? fmt::format(", {} lines skipped: not pyebpf events", bad) : "");
  std::fputs((out + report.report.render()).c_str(), stdout);
  return 0;
}

}  // namespace

int print_stored_report(const Options& options) {
  if (!is_sqlite(options.report_file)) return report_from_json_lines(options);
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
  StoredEvents stored;
  if (wants_flame_graphs(options)) {
    Options run_options = options;
    run_options.trackers = stored_tracker_options(run->info.command_line, options);
    stored.flame_graphs = std::make_unique<sinks::FlameGraphSink>(flame_graph_options(run_options, run->info));
  }
  store.for_each_event(run->run_id, [&](const nlohmann::ordered_json& e) { stored.add(e); });
  if (stored.flame_graphs) {
    stored.write_flame_graphs();
    return 0;
  }
  const sinks::Report& report = stored.report;

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
