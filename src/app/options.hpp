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

  // tcp_connect, tcp_accept, tcp_loss
  std::string net_scope = "targets";  // "targets": sockets of the target processes; "host": all
  std::string loss_filter_ip;         // tcp_loss: only events with this address at either end
  unsigned loss_rate_limit = 1000;    // tcp_loss events per second (all CPUs), 0: unlimited
};

}  // namespace pyebpf::app
