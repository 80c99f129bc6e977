// SPDX-License-Identifier: Apache-2.0
// _Py_DebugOffsets: a 3.13+ target whose own debug offsets say a field moved
// must win over the table; a free-threaded build is recognised; a table that
// does not fit the target is never half applied. The "target" here is this
// process: a buffer laid out like the start of _PyRuntime, read back through
// process_vm_readv.
#include "python/debug_offsets.hpp"

#include "row_names.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace pyebpf::python {
namespace {

class DebugOffsetsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    row = embedded_row(GetParam());
    ASSERT_EQ(row.label, GetParam());
    ASSERT_TRUE(row.debug_offsets) << "3.13+ rows must carry the _Py_DebugOffsets layout";
    ASSERT_TRUE(row.debug_offsets->free_threaded_at);
    const auto& layout = *row.debug_offsets;
    runtime.assign(layout.size, 0);
    std::memcpy(runtime.data() + layout.cookie_at, "xdebugpy", 8);
    put(layout.version_at, (3u << 24) | (static_cast<unsigned>(row.python.minor) << 16) | 0x05f0);  // 3.x.5
    // A faithful target: every value as the table has it.
    for (const auto& [name, at] : layout.fields) {
      if (auto v = row.field(name)) put(at, *v);
    }
    for (const auto& [name, at] : layout.sizes) put(at, *row.size(name));
    version = PyVersion{3, row.python.minor, 5, ""};
  }
  void put(std::uint32_t at, std::uint64_t v) { std::memcpy(runtime.data() + at, &v, 8); }
  std::uint64_t addr() const { return reinterpret_cast<std::uint64_t>(runtime.data()); }
  std::uint64_t runtime_size() const { return *row.size("_PyRuntimeState"); }

  OffsetsRow row;
  std::vector<std::uint8_t> runtime;
  ProcessMemory self{getpid()};
  PyVersion version;
};

TEST_P(DebugOffsetsTest, FaithfulTargetChangesNothing) {
  OffsetsRow applied = row;
  auto result = apply_debug_offsets(applied, self, addr(), runtime_size(), version);
  ASSERT_EQ(result.status, DebugOffsetsStatus::Applied) << result.text;
  EXPECT_NE(result.text.find("_Py_DebugOffsets"), std::string::npos);
  EXPECT_EQ(result.text.find("differs"), std::string::npos);
  EXPECT_EQ(applied.fields, row.fields);
  EXPECT_TRUE(applied.moved_by_target.empty());
}

TEST_P(DebugOffsetsTest, AMovedFieldInAPatchReleaseWins) {
  put(row.debug_offsets->fields.at("tstate.next"), row.require("tstate.next") + 8);
  put(row.debug_offsets->sizes.at("PyCodeObject"), 4242);
  OffsetsRow applied = row;
  auto result = apply_debug_offsets(applied, self, addr(), runtime_size(), version);
  ASSERT_EQ(result.status, DebugOffsetsStatus::Applied) << result.text;
  EXPECT_EQ(applied.require("tstate.next"), row.require("tstate.next") + 8);
  EXPECT_EQ(applied.size("PyCodeObject"), 4242u);
  EXPECT_NE(result.text.find("tstate.next"), std::string::npos) << result.text;
  EXPECT_EQ(applied.moved_by_target, (std::vector<std::string>{"tstate.next", "sizeof(PyCodeObject)"}));
  EXPECT_EQ(applied.require("code.flags"), row.require("code.flags")) << "fields it does not describe stay";
}

TEST_P(DebugOffsetsTest, FreeThreadedBuildIsRecognised) {
  put(*row.debug_offsets->free_threaded_at, 1);
  OffsetsRow applied = row;
  EXPECT_EQ(apply_debug_offsets(applied, self, addr(), runtime_size(), version).status,
            DebugOffsetsStatus::FreeThreaded);
  EXPECT_EQ(applied.fields, row.fields) << "nothing applied";
}

TEST_P(DebugOffsetsTest, InvalidDebugOffsetsAreNeverHalfApplied) {
  OffsetsRow applied = row;
  auto check = [&](const char* why) {
    auto result = apply_debug_offsets(applied, self, addr(), runtime_size(), version);
    EXPECT_EQ(result.status, DebugOffsetsStatus::Invalid) << why;
    EXPECT_FALSE(result.text.empty()) << why;
    EXPECT_EQ(applied.fields, row.fields) << why << ": all or nothing";
  };
  auto other_minor = version;
  other_minor.minor += 1;
  EXPECT_EQ(apply_debug_offsets(applied, self, addr(), runtime_size(), other_minor).status, DebugOffsetsStatus::Invalid)
      << "version mismatch";
  runtime[row.debug_offsets->cookie_at] = 'X';
  check("no cookie");
  runtime[row.debug_offsets->cookie_at] = 'x';
  EXPECT_EQ(apply_debug_offsets(applied, self, addr(), runtime_size() + 8, version).status, DebugOffsetsStatus::Invalid)
      << "_PyRuntime's symbol size disagrees: the positions are not this build's";
  put(row.debug_offsets->fields.at("frame.code"), 1ull << 40);
  check("garbage value");
  OffsetsRow no_layout = OffsetsTable::embedded().rows().front();
  EXPECT_EQ(apply_debug_offsets(no_layout, self, addr(), runtime_size(), version).status, DebugOffsetsStatus::NotInRow);
}

INSTANTIATE_TEST_SUITE_P(Rows, DebugOffsetsTest, ::testing::ValuesIn(kRowsWithDebugOffsets),
                         [](const auto& info) { return python::row_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::python
