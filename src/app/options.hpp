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

  double offcpu_min_total_ms = 20;       // sleeps shorter than this are dropped in BPF
  double offcpu_py_min_ms = 0;           // Python stack only for sleeps at least this long
  bool offcpu_py_enable = true;          // walk Python stacks at all
  unsigned offcpu_max_stack_depth = 20;  // kernel and user frames kept (1..64)
  double offcpu_aggregate_s = 0;         // > 0: aggregated mode, emit totals every this many seconds
  std::string offcpu_hook = "auto";      // auto | tp_btf | raw_tp
  std::string offcpu_capture = "auto";   // auto | resume | switch-out: where stacks are taken
};

}  // namespace pyebpf::app
