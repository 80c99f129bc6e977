// SPDX-License-Identifier: Apache-2.0
#include "python/offsets.hpp"

#include <gtest/gtest.h>

#include <array>

#include "pyebpf/error.hpp"
#include "python/bpf_layout.hpp"

namespace pyebpf::python {
namespace {

// The embedded row itself (select() returns pointers into the table).
const OffsetsRow& row_labelled(const std::string& label) {
  for (const auto& row : OffsetsTable::embedded().rows()) {
    if (row.label == label) return row;
  }
  throw std::runtime_error("no row " + label);
}

TEST(OffsetsTest, EmbeddedTableCoversEverySupportedMinor) {
  const auto& table = OffsetsTable::embedded();
  EXPECT_EQ(table.minors(), (std::vector<std::string>{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"}));
  EXPECT_EQ(table.select({3, 7, 16, ""}, ""), nullptr);
  EXPECT_EQ(table.select({2, 7, 18, ""}, ""), nullptr);
  for (const auto& row : table.rows()) {
    EXPECT_EQ(row.minor, row.python.minor_str()) << row.label;
    EXPECT_EQ(row.build_id.size(), 40u) << row.label << ": rows name the build they came from";
  }
}

TEST(OffsetsTest, TheTargetsOwnBuildWinsThenTheNearestPatchRelease) {
  const auto& table = OffsetsTable::embedded();
  const OffsetsRow& pyenv = row_labelled("pyenv-3.13.0");
  const OffsetsRow& debian = row_labelled("debian-3.13.18-1");
  // Debian's 3.13.18 keeps its GC generations at another offset than pyenv's
  // 3.13.0: one row per build, chosen by build-id.
  EXPECT_NE(pyenv.require("gc.generations"), debian.require("gc.generations"));
  EXPECT_EQ(table.select({3, 13, 0, ""}, pyenv.build_id), &pyenv);
  EXPECT_EQ(table.select({3, 13, 18, ""}, debian.build_id), &debian);
  EXPECT_EQ(table.select({3, 13, 18, ""}, pyenv.build_id), &pyenv) << "the build-id decides, not the version";
  // Another build: the newest row not newer than it, else the oldest newer one.
  EXPECT_EQ(table.select({3, 13, 5, ""}, "0000"), &pyenv);
  EXPECT_EQ(table.select({3, 13, 20, ""}, "0000"), &debian);
  EXPECT_EQ(table.select({3, 13, -1, ""}, ""), &debian) << "micro unknown: the newest";
  const OffsetsRow& debian314 = row_labelled("debian-3.14.10-1");
  EXPECT_EQ(table.select({3, 14, 2, ""}, "0000"), &debian314) << "only a newer row: that one, to be validated";
  EXPECT_EQ(table.select({3, 16, 0, ""}, ""), nullptr);
}

// The tag tells code objects at one address apart: a change anywhere in the
// header changes it, and bytes past the header's length do not.
TEST(OffsetsTest, CodeTagSeesEveryBitOfTheHeaderAndNothingPast) {
  std::array<std::uint8_t, PYEBPF_CODE_TAG_LEN> header{};
  for (std::size_t i = 0; i < header.size(); ++i) header[i] = static_cast<std::uint8_t>(i * 7 + 1);
  const std::uint32_t tag = pyebpf_code_tag(header.data(), 20);
  for (std::size_t bit = 0; bit < 20 * 8; ++bit) {
    auto changed = header;
    changed[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    EXPECT_NE(pyebpf_code_tag(changed.data(), 20), tag) << "bit " << bit;
  }
  for (std::size_t past = 20; past < header.size(); ++past) {
    auto changed = header;
    changed[past] ^= 0xff;
    EXPECT_EQ(pyebpf_code_tag(changed.data(), 20), tag) << "byte " << past;
  }
}

TEST(OffsetsTest, EveryRowBuildsAWalkerLayout) {
  for (const auto& row : OffsetsTable::embedded().rows()) {
    const int m = row.python.minor;
    pyebpf_py_layout l = make_bpf_layout(row, row.python);
    EXPECT_LE(l.frame_window, PYEBPF_FRAME_WINDOW - 8) << row.label;
    EXPECT_GT(l.code_tag_len, 0) << row.label;
    EXPECT_LE(l.code_tag_len, PYEBPF_CODE_TAG_LEN) << row.label;
    // The tag covers co_argcount..co_firstlineno and nothing CPython writes at
    // run time (3.11's co_warmup sits between co_flags and co_argcount).
    EXPECT_LE(l.code_tag, row.require("code.argcount")) << row.label;
    EXPECT_EQ(l.code_tag + l.code_tag_len, row.require("code.firstlineno") + 4) << row.label;
    if (m == 11) {
      EXPECT_EQ(l.code_tag, row.require("code.argcount")) << row.label;
    }
    // Version quirks the walker depends on.
    int expected_kind = m <= 9 ? PYEBPF_INSTR_LASTI_BYTES : m == 10 ? PYEBPF_INSTR_LASTI_UNITS : PYEBPF_INSTR_POINTER;
    EXPECT_EQ(l.instr_kind, expected_kind) << row.label;
    EXPECT_EQ(l.cframe_current_frame != PYEBPF_NO_OFFSET, m == 11 || m == 12) << row.label;
    EXPECT_EQ(l.frames_stacked, m >= 11) << row.label;
    // One read brings a code object's type and tag (bpf/python.bpf.h).
    EXPECT_LE(l.object_type + 8, l.code_tag) << row.label;
    EXPECT_LT(l.code_tag + l.code_tag_len - l.object_type, PYEBPF_CODE_WINDOW) << row.label;
    // The first owner that is no Python frame: FRAME_OWNED_BY_CSTACK = 3 in
    // 3.12/3.13; 3.14 inserted FRAME_OWNED_BY_INTERPRETER = 3 (CSTACK moved to
    // 4), 3.15 dropped CSTACK.
    EXPECT_EQ(l.owner_cstack, m >= 12 ? 3 : 0xff) << row.label;
    // 3.14+ count freed code objects (interp->_code_object_generation), and
    // the walker reads the thread's interpreter with its frame pointer.
    EXPECT_EQ(l.interp_code_generation != PYEBPF_NO_OFFSET, m >= 14) << row.label;
    if (l.interp_code_generation != PYEBPF_NO_OFFSET) {
      EXPECT_EQ(l.tstate_interp, row.require("tstate.interp")) << row.label;
      EXPECT_LT(l.tstate_interp, l.tstate_frame) << row.label;
      EXPECT_LE(l.tstate_frame + 8 - l.tstate_interp, PYEBPF_TSTATE_WINDOW) << row.label;
    }
  }
}

TEST(OffsetsTest, KnownValuesOf311) {
  const OffsetsRow& row = row_labelled("pyenv-3.11.7");
  // Cross-checked against strobelight, Parca and the OTel profiler (see the spec).
  EXPECT_EQ(row.require("runtime.interpreters_head"), 40u);
  EXPECT_EQ(row.require("runtime.tss_key"), 596u);
  EXPECT_EQ(row.require("runtime.gil") + row.require("gil.last_holder"), 368u);
  EXPECT_EQ(row.require("tstate.frame"), 56u);
  EXPECT_EQ(row.member("tstate.frame"), "PyThreadState.cframe");
  EXPECT_EQ(row.require("frame.code"), 32u);
  EXPECT_EQ(row.require("frame.instr"), 56u);
  EXPECT_EQ(row.require("code.code_adaptive"), 184u);
  EXPECT_EQ(row.size("_PyRuntimeState"), 0x28b20u);
  EXPECT_EQ(row.bit("unicode.state.kind")->width, 3u);
}

TEST(OffsetsTest, Python315KeepsItsGcTotalsInRings) {
  const OffsetsRow& row = row_labelled("debian-3.15.2-1");
  EXPECT_FALSE(row.field("gc.generation_stats")) << "no inline array any more";
  EXPECT_TRUE(row.field("gc.stats_rings"));
  EXPECT_EQ(row.array_length("gcrings.old"), 2u);
  EXPECT_GT(row.array_length("gcring_young.items").value_or(0), 1u);
  EXPECT_EQ(row.size("struct gc_generation_stats"), 64u) << "ts_start, ts_stop, ..., heap_size";
  const OffsetsRow& row314 = row_labelled("debian-3.14.10-1");
  EXPECT_EQ(row314.array_length("gc.generation_stats"), 3u);
  EXPECT_EQ(row314.size("struct gc_generation_stats"), 24u);
}

TEST(OffsetsTest, MissingFieldIsANamedError) {
  const OffsetsRow& row = row_labelled("pyenv-3.10.13");
  try {
    row.require("code.qualname");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("code.qualname"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3.10"), std::string::npos);
  }
}

TEST(OffsetsTest, MalformedTablesAreRejected) {
  EXPECT_THROW(OffsetsTable::parse("not json"), Error);
  EXPECT_THROW(OffsetsTable::parse(R"({"schema": 1, "versions": {}})"), Error);
  EXPECT_THROW(OffsetsTable::parse(R"({"schema": 2, "builds": {"x": {"fields": {}}}})"), Error);
  auto ok = OffsetsTable::parse(std::string(R"({"schema": 2, "builds": {"b": )") +
                                R"({"minor": "3.99", "derived_from": {"python": "3.99.1", "build_id": "ab"},
      "fields": {"a.b": {"offset": 8, "member": "T.b"}}, "sizes": {}, "bits": {}, "constants": {}}}})");
  ASSERT_NE(ok.select({3, 99, 1, ""}, ""), nullptr);
  EXPECT_EQ(ok.select({3, 99, 1, ""}, "")->require("a.b"), 8u);
  EXPECT_THROW(OffsetsTable::parse(R"({"schema": 2, "builds": {"b": {"minor": "3.99", "derived_from": {"python":
      "3.98.1"}, "fields": {}, "sizes": {}, "bits": {}, "constants": {}}}})"),
               Error)
      << "a row's version must be of its minor";
}

}  // namespace
}  // namespace pyebpf::python
