// SPDX-License-Identifier: Apache-2.0
// util/self_cost: the summary's line about pyebpf's own peak memory and CPU.
#include "util/self_cost.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <ctime>
#include <memory>

namespace pyebpf {
namespace {

TEST(SelfCost, PeakRssCountsMemoryTouchedAndCpuCountsWorkDone) {
  const SelfCost before = self_cost();
  constexpr std::size_t kBytes = 96 << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);  // resident now
  // 0.2 s of this process's CPU time, however busy the machine is.
  volatile std::uint64_t sum = 0;
  timespec t0{}, t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  do {
    for (int i = 0; i < 100000; ++i) sum = sum + static_cast<unsigned char>(block[sum % kBytes]);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < 0.2);
  const SelfCost after = self_cost();
  EXPECT_GE(after.peak_rss_mb, 96.0);
  EXPECT_GE(after.user_s + after.system_s - before.user_s - before.system_s, 0.15);
}

TEST(SelfCost, LineStatesMemoryCpuAndShareOfOneCpu) {
  EXPECT_EQ(self_cost_line({38.24, 1.2, 0.3, 412}, 60.0),
            "own cost: peak RSS 38.2 MB, CPU 1.20 s user + 0.30 s system in 60.0 s (2.5% of one CPU), "
            "412 reads of target memory");
  EXPECT_EQ(self_cost_line({1, 0, 0, 0}, 0),
            "own cost: peak RSS 1.0 MB, CPU 0.00 s user + 0.00 s system in 0.0 s (0.0% of one CPU), "
            "0 reads of target memory");
}

}  // namespace
}  // namespace pyebpf
