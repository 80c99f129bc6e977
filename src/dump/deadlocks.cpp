// SPDX-License-Identifier: Apache-2.0
#include "dump/deadlocks.hpp"

#include <algorithm>
#include <map>

namespace pyebpf::dump {

void find_deadlocks(std::vector<DumpedProcess>& processes) {
  for (auto& p : processes) {
    std::map<pid_t, DumpedThread*> by_tid;
    for (auto& t : p.threads) by_tid[static_cast<pid_t>(t.raw.hdr.tid)] = &t;
    for (auto& t : p.threads) {
      // Follow the chain from t; it is on a cycle if it comes back to t
      // within as many steps as there are threads.
      std::vector<pid_t> path{static_cast<pid_t>(t.raw.hdr.tid)};
      const DumpedThread* at = &t;
      for (std::size_t step = 0; step < p.threads.size() && at->waits_for; ++step) {
        pid_t next = *at->waits_for;
        if (next == path.front()) {
          t.deadlock = path;
          break;
        }
        auto it = by_tid.find(next);
        if (it == by_tid.end()) break;
        path.push_back(next);
        at = it->second;
      }
    }
  }
}

std::vector<pid_t> canonical_cycle(std::vector<pid_t> cycle) {
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

}  // namespace pyebpf::dump
