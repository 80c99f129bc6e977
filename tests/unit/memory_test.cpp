// SPDX-License-Identifier: Apache-2.0
// ProcessMemory on this process's own memory: what a Batch caches, for how
// long, and that it never turns an unreadable byte into a readable one.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <thread>

#include "python/memory.hpp"

namespace pyebpf::python {
namespace {

std::uint64_t address_of(const void* p) {
  return reinterpret_cast<std::uint64_t>(p);
}

TEST(ProcessMemoryBatch, ReadsTheSameBytesAsDirectReadsAcrossChunks) {
  ProcessMemory memory{getpid()};
  alignas(256) std::array<std::uint8_t, 1024> buffer{};
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::uint8_t>(i * 7);
  ProcessMemory::Batch batch(memory);
  for (std::size_t at : {0, 1, 200, 255, 256, 300, 511, 700}) {
    std::array<std::uint8_t, 256> got{};
    ASSERT_TRUE(memory.read(address_of(buffer.data() + at), got.data(), std::min<std::size_t>(256, 1024 - at)))
        << "at " << at;
    EXPECT_EQ(0, std::memcmp(got.data(), buffer.data() + at, std::min<std::size_t>(256, 1024 - at))) << "at " << at;
  }
}

TEST(ProcessMemoryBatch, KeepsWhatItReadUntilTheLastBatchEnds) {
  ProcessMemory memory{getpid()};
  alignas(256) std::array<std::uint64_t, 64> words{};  // two chunks
  words[3] = 1;
  {
    ProcessMemory::Batch outer(memory);
    EXPECT_EQ(memory.read_u64(address_of(&words[3])), 1u);
    words[3] = 2;
    words[4] = 5;  // same chunk, read after the change: still the chunk as first read
    {
      ProcessMemory::Batch inner(memory);
      EXPECT_EQ(memory.read_u64(address_of(&words[3])), 1u) << "one system call per chunk in a batch";
      EXPECT_EQ(memory.read_u64(address_of(&words[4])), 0u);
    }
    EXPECT_EQ(memory.read_u64(address_of(&words[3])), 1u) << "an inner batch's end keeps the outer one's chunks";
    std::uint64_t big[64];  // larger than a chunk: read directly
    ASSERT_TRUE(memory.read(address_of(words.data()), big, sizeof(words)));
    EXPECT_EQ(big[3], 2u);
    std::uint64_t from_other = 0;
    std::thread([&] { from_other = memory.read_u64(address_of(&words[3])).value_or(0); }).join();
    EXPECT_EQ(from_other, 2u) << "another thread's reads are not served from this batch";
  }
  EXPECT_EQ(memory.read_u64(address_of(&words[3])), 2u);
}

TEST(ProcessMemoryBatch, AnUnreadablePageStaysUnreadable) {
  ProcessMemory memory{getpid()};
  const long page = sysconf(_SC_PAGESIZE);
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* bytes = static_cast<std::uint8_t*>(map);
  ASSERT_EQ(0, mprotect(bytes + page, page, PROT_NONE));
  std::memset(bytes, 0x5a, page);
  {
    ProcessMemory::Batch batch(memory);
    EXPECT_EQ(memory.read_value<std::uint8_t>(address_of(bytes + page - 1)), 0x5a);
    EXPECT_EQ(memory.read_u64(address_of(bytes + page - 4)), std::nullopt) << "straddles into the protected page";
    EXPECT_EQ(memory.read_value<std::uint8_t>(address_of(bytes + page)), std::nullopt);
    EXPECT_EQ(memory.read_value<std::uint8_t>(address_of(bytes + page + 100)), std::nullopt) << "failure cached";
    EXPECT_EQ(memory.read_u64(0), std::nullopt);
  }
  munmap(map, 2 * page);
}

}  // namespace
}  // namespace pyebpf::python
