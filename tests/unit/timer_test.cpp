// SPDX-License-Identifier: Apache-2.0
// util/timer: timerfds and the jitter that keeps pyebpf's wakeups out of step
// with its sampling timer.
#include "util/timer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>

namespace pyebpf {
namespace {

using namespace std::chrono_literals;

TEST(Timer, JitteredStaysWithinTheSpreadAndVaries) {
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    auto d = jittered(1s, 0.02);
    ASSERT_GE(d, 980ms);
    ASSERT_LE(d, 1020ms);
    seen.insert(d.count());
  }
  // Phases spread over the whole 40 ms window, i.e. several sampling periods.
  EXPECT_GT(seen.size(), 900u);
  EXPECT_LT(*seen.begin(), std::chrono::nanoseconds(990ms).count());
  EXPECT_GT(*seen.rbegin(), std::chrono::nanoseconds(1010ms).count());
}

TEST(Timer, FiresOnceWithoutIntervalAndResetsWhenRead) {
  EXPECT_FALSE(expired(make_timer(1h, {})));
  Fd timer = make_timer(1ms, {});
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(expired(timer));
  EXPECT_FALSE(expired(timer));  // read resets it, and it does not repeat
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(expired(timer));
}

TEST(Timer, JitteredTimerFiresAgainAfterEachRead) {
  JitteredTimer timer(2ms, 0.25);
  EXPECT_FALSE(timer.expired());  // not before its first wait
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(timer.expired()) << "round " << i;
    EXPECT_FALSE(timer.expired());  // read resets it until the next wait ends
  }
}

}  // namespace
}  // namespace pyebpf
