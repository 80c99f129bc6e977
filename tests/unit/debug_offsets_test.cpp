// SPDX-License-Identifier: Apache-2.0
// _Py_DebugOffsets: a 3.13.x target whose own debug offsets say a field moved
// must win over the table. The "target" here is this process: a buffer laid
// out like the start of _PyRuntime, read back through process_vm_readv.
#include "python/debug_offsets.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace pyebpf::python {
namespace {

class DebugOffsetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const OffsetsRow* r = OffsetsTable::embedded().find(3, 13);
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->debug_offsets) << "3.13 row must carry the _Py_DebugOffsets layout";
    row = *r;
    const auto& layout = *row.debug_offsets;
    runtime.assign(layout.size, 0);
    std::memcpy(runtime.data() + layout.cookie_at, "xdebugpy", 8);
    put(layout.version_at, 0x030d05f0);  // 3.13.5
    // A faithful target: every value as the table has it.
    for (const auto& [name, at] : layout.fields) put(at, row.require(name));
    for (const auto& [name, at] : layout.sizes) put(at, *row.size(name));
  }
  void put(std::uint32_t at, std::uint64_t v) { std::memcpy(runtime.data() + at, &v, 8); }
  std::uint64_t addr() const { return reinterpret_cast<std::uint64_t>(runtime.data()); }

  OffsetsRow row;
  std::vector<std::uint8_t> runtime;
  ProcessMemory self{getpid()};
  PyVersion v3135{3, 13, 5, ""};
};

TEST_F(DebugOffsetsTest, FaithfulTargetChangesNothing) {
  OffsetsRow applied = row;
  auto text = apply_debug_offsets(applied, self, addr(), v3135);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("_Py_DebugOffsets"), std::string::npos);
  EXPECT_EQ(text->find("differs"), std::string::npos);
  EXPECT_EQ(applied.fields, row.fields);
}

TEST_F(DebugOffsetsTest, AMovedFieldInAPatchReleaseWins) {
  put(row.debug_offsets->fields.at("tstate.next"), row.require("tstate.next") + 8);
  put(row.debug_offsets->sizes.at("PyCodeObject"), 4242);
  OffsetsRow applied = row;
  auto text = apply_debug_offsets(applied, self, addr(), v3135);
  ASSERT_TRUE(text);
  EXPECT_EQ(applied.require("tstate.next"), row.require("tstate.next") + 8);
  EXPECT_EQ(applied.size("PyCodeObject"), 4242u);
  EXPECT_NE(text->find("tstate.next"), std::string::npos) << *text;
  EXPECT_EQ(applied.require("code.flags"), row.require("code.flags")) << "fields it does not describe stay";
}

TEST_F(DebugOffsetsTest, InvalidDebugOffsetsLeaveTheTableInCharge) {
  OffsetsRow applied = row;
  EXPECT_FALSE(apply_debug_offsets(applied, self, addr(), PyVersion{3, 14, 0, ""})) << "version mismatch";
  runtime[row.debug_offsets->cookie_at] = 'X';
  EXPECT_FALSE(apply_debug_offsets(applied, self, addr(), v3135)) << "no cookie";
  runtime[row.debug_offsets->cookie_at] = 'x';
  put(row.debug_offsets->fields.at("frame.code"), 1ull << 40);
  EXPECT_FALSE(apply_debug_offsets(applied, self, addr(), v3135)) << "garbage value";
  EXPECT_EQ(applied.fields, row.fields) << "all or nothing";
  OffsetsRow no_layout = *OffsetsTable::embedded().find(3, 11);
  EXPECT_FALSE(apply_debug_offsets(no_layout, self, addr(), v3135));
}

}  // namespace
}  // namespace pyebpf::python
