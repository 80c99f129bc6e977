// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "app/options.hpp"

namespace pyebpf::app {

// `pyebpf report FILE [--run N]`: prints, on stdout, what pyebpf printed at
// the end of that run (the summary lines and the report), rebuilt from the
// events stored in the SQLite file. With --folded, --speedscope, --pprof or
// --flamegraph it writes those files from the stored stacks instead, as the
// run would have. Throws pyebpf::Error.
int print_stored_report(const Options& options);

}  // namespace pyebpf::app
