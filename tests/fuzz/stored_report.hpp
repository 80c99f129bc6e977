// SPDX-License-Identifier: Apache-2.0
// What the report fuzz targets feed: stored events through the entry points
// `pyebpf report` reads them by (record_from_json into each metric's schema,
// SqliteStore's reader), rendered as the report prints them. File detection
// and messages (app/report_command.cpp) are not the parsers under test.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "app/registry.hpp"
#include "sinks/record_input.hpp"
#include "sinks/report.hpp"
#include "sinks/sqlite_store.hpp"

namespace pyebpf::fuzz {

class StoredReport {
 public:
  void add(const nlohmann::ordered_json& e) {
    auto m = e.find("metric");
    const std::string metric = m != e.end() && m->is_string() ? m->get<std::string>() : "?";
    const sinks::TableSchema* schema = app::schema_for_metric(metric);
    if (!schema) {
      report_.count_other(metric);
      return;
    }
    sinks::Record& r = records_.try_emplace(schema, *schema).first->second;
    sinks::record_from_json(e, r);
    report_.add(r);
  }
  const sinks::Report& report() const { return report_; }

 private:
  sinks::Report report_ = app::make_report();
  std::map<const sinks::TableSchema*, sinks::Record> records_;
};

// The report of every run a SQLite file holds (throws pyebpf::Error if the
// reader refuses the file).
inline std::string sqlite_report(const std::string& path) {
  sinks::SqliteStore store(path, sinks::SqliteStore::Mode::Read);
  std::string out;
  for (const auto& run : store.runs()) {
    StoredReport stored;
    store.for_each_event(run.run_id, [&](const nlohmann::ordered_json& e) { stored.add(e); });
    out += run.ended ? sinks::end_of_run_text(run.end.duration_s, run.end.stop_reason, run.end.summary_lines,
                                              &stored.report())
                     : stored.report().render();
  }
  return out;
}

}  // namespace pyebpf::fuzz
