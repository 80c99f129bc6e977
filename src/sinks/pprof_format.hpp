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
// function per (name, file) with its first line as start_line (0 when the
// stack came back from text: stored runs keep executing lines only). Kernel
// frames are in the mapping "[kernel.kallsyms]", native ones in a mapping
// named after their module ("libc.so.6"), the others in "[python]", all
// marked symbolized. time_nanos and duration_nanos span the events
// aggregated; `comments` become the profile's comments.
std::string pprof_profile(const FlameGraphs& graphs, std::size_t kind, const std::vector<std::string>& comments);

}  // namespace pyebpf::sinks
