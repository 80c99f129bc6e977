// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "app/options.hpp"

namespace pyebpf::app {

// `pyebpf dump {-p PID... | -n PATTERN} [--json]`: every thread of the
// targets (and their descendants, unless --no-children) at one moment, on
// stdout, without stopping them. A target that cannot be read is a line on
// stderr; throws pyebpf::Error when none can.
int print_thread_dump(const Options& options);

}  // namespace pyebpf::app
