// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sinks/flame_graph_sink.hpp"

namespace pyebpf::sinks {

// What the --flamegraph page draws, as JSON: the frames ([kind, name, file,
// line]; kind "python", "kernel" or "label"), and per kind with events its
// name, unit and milliseconds per weight, and per thread its stacks
// ([[frame ids root first], weight]).
nlohmann::json flame_graph_html_data(const FlameGraphs& graphs, const std::string& title);

// The page: one self-contained HTML file (the template src/sinks/flame_graph.html,
// embedded at build time, with the data inline; no network, no external script).
std::string flame_graph_html(const FlameGraphs& graphs, const std::string& title);

}  // namespace pyebpf::sinks
