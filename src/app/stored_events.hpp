// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "sinks/flame_graph_sink.hpp"
#include "sinks/record.hpp"
#include "sinks/report.hpp"

namespace pyebpf::app {

// Stored events (a SQLite run's or saved JSON lines) fed to a report, or to
// flame-graph files when `flame_graphs` is set: each parsed into a record of
// its metric's schema once, here; metrics no tracker emits are only counted.
// `pyebpf report` and the report fuzz targets read stored events this way.
struct StoredEvents {
  sinks::Report report;
  std::unique_ptr<sinks::FlameGraphSink> flame_graphs;
  std::map<const sinks::TableSchema*, sinks::Record> records;

  StoredEvents();
  void add(const nlohmann::ordered_json& e);
  // Writes the flame-graph files and says what was written, on stderr.
  void write_flame_graphs();
};

}  // namespace pyebpf::app
