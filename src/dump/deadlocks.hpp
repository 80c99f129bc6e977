// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "dump/threads.hpp"

namespace pyebpf::dump {

// Follows waits_for (who holds what each thread waits on) within each
// process: every thread on a cycle gets the cycle, starting from itself.
void find_deadlocks(std::vector<DumpedProcess>& processes);

// A cycle turned to start from its lowest tid: each thread of a cycle has
// it from itself, and this is the one spelling they share.
std::vector<pid_t> canonical_cycle(std::vector<pid_t> cycle);

}  // namespace pyebpf::dump
