// SPDX-License-Identifier: Apache-2.0
#include "python/offsets.hpp"

#include <gtest/gtest.h>

#include "pyebpf/error.hpp"
#include "python/bpf_layout.hpp"

namespace pyebpf::python {
namespace {

TEST(OffsetsTest, EmbeddedTableCoversEverySupportedMinor) {
  const auto& table = OffsetsTable::embedded();
  EXPECT_EQ(table.minors(), (std::vector<std::string>{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"}));
  EXPECT_EQ(table.find(3, 7), nullptr);
  EXPECT_EQ(table.find(2, 7), nullptr);
}

TEST(OffsetsTest, EveryRowBuildsAWalkerLayout) {
  const auto& table = OffsetsTable::embedded();
  for (const auto& minor : table.minors()) {
    int m = std::stoi(minor.substr(2));
    const OffsetsRow* row = table.find(3, m);
    ASSERT_NE(row, nullptr);
    pyebpf_py_layout l = make_bpf_layout(*row, PyVersion{3, m, 0, ""});
    EXPECT_LE(l.frame_window, PYEBPF_FRAME_WINDOW - 8) << minor;
    EXPECT_GT(l.code_tag_len, 0) << minor;
    EXPECT_LE(l.code_tag_len, PYEBPF_CODE_TAG_LEN) << minor;
    // The tag covers co_argcount..co_firstlineno and nothing CPython writes at
    // run time (3.11's co_warmup sits between co_flags and co_argcount).
    EXPECT_LE(l.code_tag, row->require("code.argcount")) << minor;
    EXPECT_EQ(l.code_tag + l.code_tag_len, row->require("code.firstlineno") + 4) << minor;
    if (m == 11) {
      EXPECT_EQ(l.code_tag, row->require("code.argcount")) << minor;
    }
    // Version quirks the walker depends on.
    int expected_kind = m <= 9 ? PYEBPF_INSTR_LASTI_BYTES : m == 10 ? PYEBPF_INSTR_LASTI_UNITS : PYEBPF_INSTR_POINTER;
    EXPECT_EQ(l.instr_kind, expected_kind) << minor;
    EXPECT_EQ(l.cframe_current_frame != PYEBPF_NO_OFFSET, m == 11 || m == 12) << minor;
    EXPECT_EQ(l.owner_cstack != 0xff, m >= 12) << minor;
  }
}

TEST(OffsetsTest, KnownValuesOf311) {
  const OffsetsRow* row = OffsetsTable::embedded().find(3, 11);
  ASSERT_NE(row, nullptr);
  // Cross-checked against strobelight, Parca and the OTel profiler (see the spec).
  EXPECT_EQ(row->require("runtime.interpreters_head"), 40u);
  EXPECT_EQ(row->require("runtime.tss_key"), 596u);
  EXPECT_EQ(row->require("runtime.gil") + row->require("gil.last_holder"), 368u);
  EXPECT_EQ(row->require("tstate.frame"), 56u);
  EXPECT_EQ(row->member("tstate.frame"), "PyThreadState.cframe");
  EXPECT_EQ(row->require("frame.code"), 32u);
  EXPECT_EQ(row->require("frame.instr"), 56u);
  EXPECT_EQ(row->require("code.code_adaptive"), 184u);
  EXPECT_EQ(row->size("_PyRuntimeState"), 0x28b20u);
  EXPECT_EQ(row->bit("unicode.state.kind")->width, 3u);
}

TEST(OffsetsTest, MissingFieldIsANamedError) {
  const OffsetsRow* row = OffsetsTable::embedded().find(3, 10);
  ASSERT_NE(row, nullptr);
  try {
    row->require("code.qualname");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("code.qualname"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3.10"), std::string::npos);
  }
}

TEST(OffsetsTest, MalformedTablesAreRejected) {
  EXPECT_THROW(OffsetsTable::parse("not json"), Error);
  EXPECT_THROW(OffsetsTable::parse(R"({"schema": 2, "versions": {}})"), Error);
  EXPECT_THROW(OffsetsTable::parse(R"({"schema": 1, "versions": {"3.11": {"fields": {}}}})"), Error);
  auto ok = OffsetsTable::parse(R"({"schema": 1, "versions": {"3.99": {"derived_from": {},
      "fields": {"a.b": {"offset": 8, "member": "T.b"}}, "sizes": {}, "bits": {}, "constants": {}}}})");
  ASSERT_NE(ok.find(3, 99), nullptr);
  EXPECT_EQ(ok.find(3, 99)->require("a.b"), 8u);
}

}  // namespace
}  // namespace pyebpf::python
