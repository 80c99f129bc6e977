// SPDX-License-Identifier: Apache-2.0
// bpf/ring_buffer: rings sized by the rate they must absorb.
#include "bpf_runtime/ring_buffer.hpp"

#include <gtest/gtest.h>

namespace pyebpf::bpf {
namespace {

TEST(RingBytesFor, PowerOfTwoHoldingTheHeadroomWithinBounds) {
  EXPECT_EQ(ring_bytes_for(0, 1), 256u << 10);  // floor
  EXPECT_EQ(ring_bytes_for(1000, 1), 256u << 10);
  EXPECT_EQ(ring_bytes_for(99 * 2 * 2088.0, 1), 512u << 10);  // py_stack at 99 Hz on 2 CPUs, deepest stacks
  EXPECT_EQ(ring_bytes_for(512 << 10, 1), 512u << 10);        // exactly enough
  EXPECT_EQ(ring_bytes_for((512 << 10) + 1, 1), 1u << 20);
  EXPECT_EQ(ring_bytes_for(1e6, 3), 4u << 20);
  EXPECT_EQ(ring_bytes_for(1e12, 1), 64u << 20);  // ceiling
}

}  // namespace
}  // namespace pyebpf::bpf
