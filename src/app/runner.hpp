// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "app/options.hpp"

namespace pyebpf::app {

// Checks the host, attaches to the targets, starts the trackers and moves
// events from BPF to the sinks until Ctrl-C, SIGTERM, --duration, or the last
// target exiting; then drains what BPF still holds and prints the summary on
// stderr. Returns the exit status. Throws pyebpf::Error for fatal setup errors.
int run(const Options& options);

}  // namespace pyebpf::app
