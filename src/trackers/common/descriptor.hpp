// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sinks/flame_graph_sink.hpp"
#include "sinks/report.hpp"
#include "sinks/schema.hpp"
#include "trackers/common/tracker.hpp"

namespace CLI {
class App;
}
namespace pyebpf::live {
class Tally;
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
  // A part of a tracker that --enable turns on by its own name (the TCP
  // tracker's tcp_connect, tcp_accept, tcp_loss), or a name for several
  // parts (tcp_handshake: `parts` lists them).
  struct Feature {
    std::string name;
    std::string help;
    std::vector<std::string> parts;  // empty: the feature itself
  };

  std::string name;  // as given to --enable (unless it has features); its summary line starts with it
  std::string help;  // one line, for --help
  // Its parts, when --enable can turn them on one by one. Empty: one part,
  // enabled by `name`.
  std::vector<Feature> features;
  // The metrics it emits, as the sinks store them and `pyebpf report` reads them.
  std::vector<const sinks::TableSchema*> schemas;
  // Adds its option group to the command line and returns the options CLI11
  // fills. Null: no options.
  std::shared_ptr<TrackerOptions> (*add_options)(CLI::App& cli) = nullptr;
  // A tracker, not started yet, with its parsed options (null without
  // add_options) and the features enabled (the real ones, in `features`
  // order; empty for a tracker without features).
  std::unique_ptr<Tracker> (*create)(const TrackerOptions* options, const std::vector<std::string>& features) = nullptr;
  // Its section of the end-of-run report, fed the records of `schemas`. Null: none.
  std::unique_ptr<sinks::ReportSection> (*report)() = nullptr;
  // The flame graphs its records feed (--folded, --speedscope). Null: none.
  std::vector<sinks::FlameGraphKind> (*flame_graphs)(const TrackerOptions* options) = nullptr;
  // What a record of `schemas` adds to `pyebpf top`'s view (CPU samples, a
  // thread's waits, pauses). Null: nothing.
  void (*top)(const TrackerOptions* options, const sinks::Record& record, live::Tally& tally) = nullptr;
};

}  // namespace pyebpf::trackers
