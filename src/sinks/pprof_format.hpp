// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sinks/flame_graph_sink.hpp"

namespace pyebpf::sinks {

// One kind of flame graph as a pprof Profile (proto/profile.proto),
// serialized, not yet gzipped: what Pyroscope, Parca, Datadog and
// `go tool pprof` read.
//
// Sample types: "samples/count" first when the kind counts samples, then
// "<pprof_type>/nanoseconds" (the default). One Sample per distinct stack and
// thread, labelled pid and tid (numbers), thread_name and env (text). A
// location per frame (a Python frame: its function and executing line), a
// function per (name, file); kernel frames are in the mapping
// "[kernel.kallsyms]", the others in "[python]", both marked symbolized. The
// frames' first lines are not known (stacks carry executing lines only), so
// start_line is 0. time_nanos and duration_nanos span the events aggregated;
// `comments` become the profile's comments.
std::string pprof_profile(const FlameGraphs& graphs, std::size_t kind, const std::vector<std::string>& comments);

}  // namespace pyebpf::sinks
