// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trackers/common/descriptor.hpp"

namespace CLI {
class App;
}

namespace pyebpf::app {

// THE list of trackers (registry.cpp): the one place a new tracker is added.
const std::vector<const trackers::TrackerDescriptor*>& tracker_registry();

// "py_stack, gil, ..." for --help.
std::string tracker_names_help();

// Each tracker's parsed options, by tracker name.
using TrackerOptionsMap = std::map<std::string, std::shared_ptr<trackers::TrackerOptions>, std::less<>>;

// Adds every tracker's option group to the command line, in registry order.
TrackerOptionsMap add_tracker_options(CLI::App& cli);

// Creates the trackers named on the command line (all of them when `names`
// is empty). Throws pyebpf::Error for an unknown name.
std::vector<std::unique_ptr<trackers::Tracker>> create_trackers(const std::vector<std::string>& names,
                                                                const TrackerOptionsMap& options);

// Every schema a tracker emits, in registry order.
std::vector<const sinks::TableSchema*> all_schemas();
// The schema of `metric`; null for a metric no tracker emits.
const sinks::TableSchema* schema_for_metric(std::string_view metric);

// An empty end-of-run report with every tracker's section.
sinks::Report make_report();
// What each record adds to `pyebpf top`'s view: the `top` function of the
// descriptor whose schemas include the record's.
std::function<void(const sinks::Record&, live::Tally&)> top_feed(const TrackerOptionsMap& options);
// Every tracker's flame graph kinds (CPU first).
std::vector<sinks::FlameGraphKind> flame_graph_kinds(const TrackerOptionsMap& options);
// For --help, from those kinds: "CPU, off-CPU, GIL wait", and with `files`
// where --folded and --pprof write each: "CPU in FILE, off-CPU in FILE.off_cpu, ...".
std::string flame_graph_kinds_help(const TrackerOptionsMap& options, bool files);

}  // namespace pyebpf::app
