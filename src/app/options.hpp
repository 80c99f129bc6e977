// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pyebpf::app {

// Everything the command line sets. Defaults match the original tool's.
struct Options {
  std::vector<pid_t> pids;
  std::string env;
  std::vector<std::string> enable;  // tracker names as given (empty: every implemented tracker)
  bool also_stdout = false;
  double duration_s = 0;            // 0: until Ctrl-C / SIGTERM / no target left
  int verbosity = 0;                // -v debug, -vv trace (libbpf and verifier output)

  unsigned pystack_frequency = 99;  // Hz

  double gc_min_ms = 0.0;           // gc: collections shorter than this are dropped in BPF
  bool gc_py_enable = true;         // gc: Python stack of the code that triggered the collection
  std::string gc_hook = "auto";     // gc: auto | usdt | uprobe
};

}  // namespace pyebpf::app
