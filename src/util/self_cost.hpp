// SPDX-License-Identifier: Apache-2.0
// What pyebpf itself has cost its host so far, for the end-of-run summary:
// an observer's own footprint is part of what it must report (issue 11).
#pragma once

#include <cstdint>
#include <string>

namespace pyebpf {

struct SelfCost {
  double peak_rss_mb = 0;  // VmHWM: the ring buffers' pages count, they are mapped
  double user_s = 0;       // CPU time of every thread of pyebpf
  double system_s = 0;
  std::uint64_t target_reads = 0;  // system calls that read a target's memory (names, code objects)
};

// This process's peak resident size and CPU time so far (getrusage).
SelfCost self_cost();

// "own cost: peak RSS 38.2 MB, CPU 1.20 s user + 0.30 s system in
// 60.0 s (2.5% of one CPU), 412 reads of target memory"
std::string self_cost_line(const SelfCost& cost, double elapsed_s);

}  // namespace pyebpf
