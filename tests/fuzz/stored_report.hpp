// SPDX-License-Identifier: Apache-2.0
// What the report fuzz targets feed: stored events through the entry points
// `pyebpf report` reads them by (app::StoredEvents, SqliteStore's reader),
// rendered as the report prints them. File detection and messages
// (app/report_command.cpp) are not the parsers under test.
#pragma once

#include <string>

#include "app/stored_events.hpp"
#include "sinks/report.hpp"
#include "sinks/sqlite_store.hpp"

namespace pyebpf::fuzz {

// The report of every run a SQLite file holds (throws pyebpf::Error if the
// reader refuses the file).
inline std::string sqlite_report(const std::string& path) {
  sinks::SqliteStore store(path, sinks::SqliteStore::Mode::Read);
  std::string out;
  for (const auto& run : store.runs()) {
    app::StoredEvents stored;
    store.for_each_event(run.run_id, [&](const nlohmann::ordered_json& e) { stored.add(e); });
    out += run.ended
               ? sinks::end_of_run_text(run.end.duration_s, run.end.stop_reason, run.end.summary_lines, &stored.report)
               : stored.report.render();
  }
  return out;
}

}  // namespace pyebpf::fuzz
