// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trackers/tracker.hpp"

namespace pyebpf::app {

// THE list of trackers: the one place a new tracker is added.
struct TrackerInfo {
  std::string name;
  std::string help;
  // Null while the tracker is planned but not implemented yet.
  std::function<std::unique_ptr<trackers::Tracker>()> create;
  // Names this one stands for (tcp_handshake -> tcp_accept, tcp_connect).
  std::vector<std::string> expands_to;
};

const std::vector<TrackerInfo>& tracker_registry();

// "py_stack, gil, ..." for --help.
std::string tracker_names_help();

// Creates the trackers named on the command line (all implemented ones when
// `names` is empty). Throws pyebpf::Error for an unknown or unimplemented name.
std::vector<std::unique_ptr<trackers::Tracker>> create_trackers(const std::vector<std::string>& names);

}  // namespace pyebpf::app
