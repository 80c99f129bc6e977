// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sinks/flame_graph_sink.hpp"
#include "sinks/report.hpp"
#include "sinks/schema.hpp"
#include "trackers/tracker.hpp"

namespace CLI {
class App;
}

namespace pyebpf::trackers {

// A tracker's own command-line options: each tracker derives a struct with
// its fields (and their defaults), which its add_options binds to its flags.
// No other tracker sees them.
struct TrackerOptions {
  virtual ~TrackerOptions() = default;
};

// Everything the rest of pyebpf knows about one tracker, in one place: the
// registry (app/registry.cpp) lists these, and the command line, the schemas
// the sinks store, the end-of-run report and the flame graphs are loops over
// them. docs/development.md says how to add one.
struct TrackerDescriptor {
  std::string name;  // as given to --enable; its summary line starts with it
  std::string help;  // one line, for --help
  // An --enable name that stands for other trackers (tcp_handshake ->
  // tcp_connect, tcp_accept): only `name`, `help` and this are set.
  std::vector<std::string> expands_to;
  // The metrics it emits, as the sinks store them and `pyebpf report` reads them.
  std::vector<const sinks::TableSchema*> schemas;
  // Adds its option group to the command line and returns the options CLI11
  // fills. Trackers that share flags (the TCP ones) share this function, and
  // the registry calls it once. Null: no options.
  std::shared_ptr<TrackerOptions> (*add_options)(CLI::App& cli) = nullptr;
  // A tracker, not started yet, with its parsed options (null without add_options).
  std::unique_ptr<Tracker> (*create)(const TrackerOptions* options) = nullptr;
  // Its section of the end-of-run report, fed the records of `schemas`. Null: none.
  std::unique_ptr<sinks::ReportSection> (*report)() = nullptr;
  // The flame graphs its records feed (--folded, --speedscope). Null: none.
  std::vector<sinks::FlameGraphKind> (*flame_graphs)(const TrackerOptions* options) = nullptr;
};

}  // namespace pyebpf::trackers
