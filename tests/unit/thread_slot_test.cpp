// SPDX-License-Identifier: Apache-2.0
// Where each thread keeps its own PyThreadState: the decoder of a
// thread-local load, and the check of a candidate slot against the threads.
// The "threads" are buffers in this process, read through process_vm_readv.
#include "python/thread_slot.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "binary/elf_file.hpp"

namespace pyebpf::python {
namespace {

std::vector<std::uint8_t> bytes(std::initializer_list<int> b) {
  return std::vector<std::uint8_t>(b.begin(), b.end());
}

TEST(DecodeTlsLoad, LocalExecLoadGivesItsOffset) {
  // Debian sid's python3.15 PyGILState_GetThisThreadState: endbr64; mov %fs:-0x28,%rax; ret
  EXPECT_EQ(
      decode_tls_load(bytes({0xf3, 0x0f, 0x1e, 0xfa, 0x64, 0x48, 0x8b, 0x04, 0x25, 0xd8, 0xff, 0xff, 0xff, 0xc3})),
      -0x28);
  // Without endbr64, into %r12.
  EXPECT_EQ(decode_tls_load(bytes({0x64, 0x4c, 0x8b, 0x24, 0x25, 0xe0, 0xff, 0xff, 0xff, 0xc3})), -0x20);
}

TEST(DecodeTlsLoad, AnythingElseIsNotDecoded) {
  // 3.14: cmpl $0x0,autoTSSkey(%rip) ... jmp PyThread_tss_get (a TSD slot, not TLS).
  EXPECT_FALSE(decode_tls_load(bytes({0xf3, 0x0f, 0x1e, 0xfa, 0x83, 0x3d, 0x3b, 0x49, 0x77, 0x00, 0x00})));
  // A shared libpython: data16 lea tls_index(%rip),%rdi; call __tls_get_addr.
  EXPECT_FALSE(decode_tls_load(bytes({0x48, 0x83, 0xec, 0x08, 0x66, 0x48, 0x8d, 0x3d, 0x14, 0x7b, 0x25, 0x00})));
  // mov %fs:0x10,%rax reads the TCB (above the thread pointer), not a TLS variable.
  EXPECT_FALSE(decode_tls_load(bytes({0x64, 0x48, 0x8b, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00})));
  EXPECT_FALSE(decode_tls_load(bytes({0x64, 0x48, 0x8b, 0x04})));
  EXPECT_FALSE(decode_tls_load({}));
}

// Two fake threads: each a block with the thread pointer in the middle.
class ThreadSlotTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kHalf = 0x1000;
  void SetUp() override {
    for (auto& block : blocks) block.assign(2 * kHalf, 0);
  }
  std::uint64_t tp(int i) { return reinterpret_cast<std::uint64_t>(blocks[i].data() + kHalf); }
  void put(int i, std::int64_t offset, std::uint64_t value) {
    std::memcpy(blocks[i].data() + kHalf + offset, &value, 8);
  }
  std::vector<ThreadStateRef> threads() { return {{0x1000, tp(0)}, {0x2000, tp(1)}}; }

  std::vector<std::uint8_t> blocks[2];
  ProcessMemory self{getpid()};
};

TEST_F(ThreadSlotTest, DecodedThreadLocalIsKeptOnlyIfEveryThreadHoldsItsOwnState) {
  put(0, -0x28, 0x1000);
  put(1, -0x28, 0x2000);
  EXPECT_EQ(find_thread_state_slot(self, threads(), -0x28), -0x28);
  put(1, -0x28, 0x1000);  // another thread's state: not this variable
  EXPECT_EQ(find_thread_state_slot(self, threads(), -0x28), std::nullopt);
}

TEST_F(ThreadSlotTest, TsdSlotIsTheOneOffsetAllThreadsAgreeOn) {
  put(0, 0x318, 0x1000);
  put(1, 0x318, 0x2000);
  put(0, 0x40, 0x1000);  // one thread only: a coincidence
  EXPECT_EQ(find_thread_state_slot(self, threads(), std::nullopt), 0x318);
  put(1, 0x40, 0x2000);  // two candidates: ambiguous
  EXPECT_EQ(find_thread_state_slot(self, threads(), std::nullopt), std::nullopt);
}

}  // namespace
}  // namespace pyebpf::python
