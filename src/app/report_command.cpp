// SPDX-License-Identifier: Apache-2.0
#include "app/report_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "app/registry.hpp"
#include "pyebpf/error.hpp"
#include "sinks/record_input.hpp"
#include "sinks/report.hpp"
#include "sinks/sqlite_store.hpp"
#include "util/clock.hpp"

namespace pyebpf::app {

namespace {

// A report fed stored events: each parsed into a record of its metric's
// schema once, here; metrics no tracker emits are only counted.
struct StoredEvents {
  sinks::Report report = make_report();
  std::map<const sinks::TableSchema*, sinks::Record> records;

  void add(const nlohmann::ordered_json& e) {
    auto m = e.find("metric");
    std::string metric = m != e.end() && m->is_string() ? m->get<std::string>() : "?";
    const sinks::TableSchema* schema = schema_for_metric(metric);
    if (!schema) {
      report.count_other(metric);
      return;
    }
    sinks::Record& r = records.try_emplace(schema, *schema).first->second;
    sinks::record_from_json(e, r);
    report.add(r);
  }
};

bool is_sqlite(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path, "check the path");
  char magic[16] = {};
  f.read(magic, sizeof(magic));
  return std::string(magic, sizeof(magic)) == std::string("SQLite format 3\0", 16);
}

// JSON lines as pyebpf prints them (a saved stdout): the report only, since
// the run's summary lines went to stderr.
int report_from_json_lines(const std::string& path) {
  std::ifstream f(path);
  StoredEvents report;
  std::string line;
  std::size_t bad = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto e = nlohmann::ordered_json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object()) {
      ++bad;
      continue;
    }
    report.add(e);
  }
  std::string out = fmt::format("pyebpf report: {} (JSON lines{})\n\n", path,
                                bad ? fmt::format(", {} lines skipped: not JSON objects", bad) : "");
  std::fputs((out + report.report.render()).c_str(), stdout);
  return 0;
}

}  // namespace

int print_stored_report(const Options& options) {
  if (!is_sqlite(options.report_file)) return report_from_json_lines(options.report_file);
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
  store.for_each_event(run->run_id, [&](const nlohmann::ordered_json& e) { stored.add(e); });
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
