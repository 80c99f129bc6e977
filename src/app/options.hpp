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

  double gil_min_wait_ms = 1.0;     // waits shorter than this are counted, not reported
  bool gil_py_enable = true;        // walk waiter and holder Python stacks
  double gil_py_min_ms = 0.0;       // ... only for waits at least this long
  std::string gil_hook = "auto";    // auto | take_gil | cond_wait
};

}  // namespace pyebpf::app
