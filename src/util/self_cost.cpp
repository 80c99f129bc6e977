// SPDX-License-Identifier: Apache-2.0
#include "util/self_cost.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

namespace pyebpf {
namespace {

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

}  // namespace

SelfCost self_cost() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return {};
  return {static_cast<double>(usage.ru_maxrss) / 1024.0, seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

std::string self_cost_line(const SelfCost& cost, double elapsed_s) {
  const double share = elapsed_s > 0 ? 100.0 * (cost.user_s + cost.system_s) / elapsed_s : 0;
  return fmt::format(
      "own cost: peak RSS {:.1f} MB, CPU {:.2f} s user + {:.2f} s system in {:.1f} s ({:.1f}% of one CPU), "
      "{} reads of target memory",
      cost.peak_rss_mb, cost.user_s, cost.system_s, elapsed_s, share, cost.target_reads);
}

}  // namespace pyebpf
