// Line-table decoders against ground truth recorded from real interpreters
// (tests/unit/fixtures/line_tables/3.X.json, written by
// tools/record-linetable-fixtures), plus hand-built malformed tables.
#include "python/line_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#ifndef PYEBPF_FIXTURES_DIR
#error "PYEBPF_FIXTURES_DIR must name the repository's tests/unit/fixtures directory"
#endif

namespace {

using pyebpf::python::line_for_offset;
using pyebpf::python::line_table_format;
using pyebpf::python::LineTableFormat;
using Bytes = std::vector<std::uint8_t>;

constexpr auto kLnotab = LineTableFormat::Lnotab;
constexpr auto k310 = LineTableFormat::Linetable310;
constexpr auto k311 = LineTableFormat::Locations311;

std::optional<int> line(LineTableFormat format, const Bytes& table, int first_line, std::int64_t offset) {
  return line_for_offset(format, table, first_line, offset);
}

Bytes from_hex(const std::string& hex) {
  Bytes out;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) {
    ADD_FAILURE() << "odd-length hex string in fixture";
    return out;
  }
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      ADD_FAILURE() << "bad hex digit in fixture";
      return {};
    }
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
  }
  return out;
}

const char* format_name(LineTableFormat format) {
  switch (format) {
    case LineTableFormat::Lnotab:
      return "lnotab";
    case LineTableFormat::Linetable310:
      return "linetable310";
    case LineTableFormat::Locations311:
      return "locations311";
  }
  return "?";
}

std::string show(std::optional<int> value) {
  return value ? std::to_string(*value) : std::string("null");
}

class RecordedLineTables : public ::testing::TestWithParam<int> {};

// Every supported minor must have a fixture: a missing file is a failure, not a skip,
// so a fixture cannot silently drop out of the suite.
TEST_P(RecordedLineTables, MatchInterpreter) {
  const int minor = GetParam();
  const std::string path = std::string(PYEBPF_FIXTURES_DIR) + "/line_tables/3." + std::to_string(minor) + ".json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing fixture " << path << " (record it with tools/record-linetable-fixtures)";
  const nlohmann::json fixture = nlohmann::json::parse(in);

  const LineTableFormat format = line_table_format(3, minor);
  ASSERT_EQ(fixture.at("format").get<std::string>(), format_name(format));
  const auto& objects = fixture.at("code_objects");
  ASSERT_FALSE(objects.empty());

  std::size_t checked = 0;
  std::size_t no_line = 0;
  int failures = 0;
  constexpr int kMaxReportedFailures = 20;
  for (const auto& object : objects) {
    const std::string qualname = object.at("qualname").get<std::string>();
    const int first_line = object.at("first_line").get<int>();
    const std::int64_t code_size = object.at("code_size").get<std::int64_t>();
    const Bytes table = from_hex(object.at("table_hex").get<std::string>());
    const auto& expected = object.at("expected");
    ASSERT_EQ(static_cast<std::int64_t>(expected.size()) * 2, code_size) << qualname;

    for (const auto& entry : expected) {
      const std::int64_t offset = entry.at(0).get<std::int64_t>();
      const std::optional<int> want = entry.at(1).is_null() ? std::nullopt : std::optional<int>(entry.at(1).get<int>());
      const std::optional<int> got = line(format, table, first_line, offset);
      ++checked;
      no_line += want ? 0 : 1;
      if (got != want && ++failures <= kMaxReportedFailures) {
        ADD_FAILURE() << "3." << minor << " " << qualname << " (first line " << first_line << ") offset " << offset
                      << ": expected " << show(want) << ", got " << show(got);
      }
    }
    // 3.10+ tables cover the bytecode exactly, so the first offset past it is unknown.
    if (format != LineTableFormat::Lnotab) {
      EXPECT_EQ(line(format, table, first_line, code_size), std::nullopt) << qualname;
    }
    EXPECT_EQ(line(format, table, first_line, -2), std::nullopt) << qualname;
  }
  EXPECT_EQ(failures, 0) << failures << " of " << checked << " offsets decoded wrongly";
  RecordProperty("checked", static_cast<int>(checked));
  std::cout << "[ fixture  ] 3." << minor << " (" << fixture.at("python").get<std::string>() << "): " << objects.size()
            << " code objects, " << checked << " offsets checked (" << no_line << " with no line)\n";
}

INSTANTIATE_TEST_SUITE_P(CPython, RecordedLineTables, ::testing::Values(8, 9, 10, 11, 12, 13),
                         [](const ::testing::TestParamInfo<int>& info) { return "3_" + std::to_string(info.param); });

TEST(LineTableFormat, ByVersion) {
  EXPECT_EQ(line_table_format(3, 8), kLnotab);
  EXPECT_EQ(line_table_format(3, 9), kLnotab);
  EXPECT_EQ(line_table_format(3, 10), k310);
  EXPECT_EQ(line_table_format(3, 11), k311);
  EXPECT_EQ(line_table_format(3, 12), k311);
  EXPECT_EQ(line_table_format(3, 13), k311);
  EXPECT_EQ(line_table_format(3, 14), k311);
}

// ---- co_lnotab (3.8/3.9) ----

TEST(Lnotab, EmptyTableMeansEverythingOnFirstLine) {
  // Valid in CPython (e.g. a one-line lambda), unlike an empty 3.10+ table.
  EXPECT_EQ(line(kLnotab, {}, 7, 0), 7);
  EXPECT_EQ(line(kLnotab, {}, 7, 10), 7);
}

TEST(Lnotab, SignedDeltasAndSplitPairs) {
  // offset 0 -> line 10; offset 6 -> +200 split as (6,127),(0,73); offset 300 -> -128
  // split as (255,0),(39,-128).
  const Bytes table = {6, 127, 0, 73, 255, 0, 39, 0x80};
  EXPECT_EQ(line(kLnotab, table, 10, 0), 10);
  EXPECT_EQ(line(kLnotab, table, 10, 4), 10);
  EXPECT_EQ(line(kLnotab, table, 10, 6), 210);
  EXPECT_EQ(line(kLnotab, table, 10, 298), 210);
  EXPECT_EQ(line(kLnotab, table, 10, 300), 82);
}

TEST(Lnotab, OffsetPastEndKeepsLastLine) {
  // co_lnotab has no length: like PyCode_Addr2Line, the last line extends onward.
  const Bytes table = {4, 1};
  EXPECT_EQ(line(kLnotab, table, 1, 1000000), 2);
}

TEST(Lnotab, Malformed) {
  EXPECT_EQ(line(kLnotab, {4, 1}, 1, -1), std::nullopt);
  EXPECT_EQ(line(kLnotab, {4, 1, 4}, 1, 0), std::nullopt);  // truncated mid-pair
  EXPECT_EQ(line(kLnotab, {0, 0x80}, 1, 0), std::nullopt);  // line would go negative
  EXPECT_EQ(line(kLnotab, {0, 1}, std::numeric_limits<int>::max(), 0), std::nullopt);
  EXPECT_EQ(line(kLnotab, {}, -5, 0), std::nullopt);
}

// ---- co_linetable (3.10) ----

TEST(Linetable310, NoLineEntriesLeaveRunningLineAlone) {
  // [0,4) line 5+1; [4,6) no line; [6,8) line 6+2 (delta from 6, not from "no line").
  const Bytes table = {4, 1, 2, 0x80, 2, 2};
  EXPECT_EQ(line(k310, table, 5, 0), 6);
  EXPECT_EQ(line(k310, table, 5, 2), 6);
  EXPECT_EQ(line(k310, table, 5, 4), std::nullopt);
  EXPECT_EQ(line(k310, table, 5, 6), 8);
}

TEST(Linetable310, ZeroLengthRangesOnlyMoveTheLine) {
  // Line jump of +200 is split (0,127),(2,73).
  const Bytes table = {0, 127, 2, 73};
  EXPECT_EQ(line(k310, table, 1, 0), 201);
}

TEST(Linetable310, Malformed) {
  EXPECT_EQ(line(k310, {}, 1, 0), std::nullopt);            // empty table
  EXPECT_EQ(line(k310, {2, 1}, 1, 2), std::nullopt);        // offset past end
  EXPECT_EQ(line(k310, {2, 1}, 1, -2), std::nullopt);       // negative offset
  EXPECT_EQ(line(k310, {2, 1, 2}, 1, 0), std::nullopt);     // truncated mid-pair
  EXPECT_EQ(line(k310, {0, 0, 0, 0}, 1, 0), std::nullopt);  // only empty ranges
  EXPECT_EQ(line(k310, {2, 0x81}, 1, 0), std::nullopt);     // line 1 - 127 < 0
}

// ---- location table (3.11+) ----

// Header byte of a location entry: bit 7, 4-bit code, length - 1 in code units.
constexpr std::uint8_t head(int code, int units) {
  return static_cast<std::uint8_t>(0x80 | (code << 3) | (units - 1));
}

TEST(Locations311, EveryEntryKind) {
  const Bytes table = {
      head(0, 1),  0x12,                 // [0,2)   short form: line 10
      head(11, 2), 3,    9,              // [2,6)   one-line form: +1 -> 11
      head(13, 1), 0x48, 0x03,           // [6,8)   no columns: svarint 200 -> +100 -> 111
      head(15, 3),                       // [8,14)  no location
      head(14, 8), 0x05, 1,    2, 0x3f,  // [14,30) long form: svarint 5 -> -2 -> 109
      head(12, 1), 1,    2,              // [30,32) one-line form: +2 -> 111
  };
  EXPECT_EQ(line(k311, table, 10, 0), 10);
  EXPECT_EQ(line(k311, table, 10, 2), 11);
  EXPECT_EQ(line(k311, table, 10, 4), 11);
  EXPECT_EQ(line(k311, table, 10, 6), 111);
  EXPECT_EQ(line(k311, table, 10, 8), std::nullopt);
  EXPECT_EQ(line(k311, table, 10, 12), std::nullopt);
  EXPECT_EQ(line(k311, table, 10, 14), 109);
  EXPECT_EQ(line(k311, table, 10, 28), 109);
  EXPECT_EQ(line(k311, table, 10, 30), 111);
  EXPECT_EQ(line(k311, table, 10, 32), std::nullopt);  // past the end
}

TEST(Locations311, Malformed) {
  const std::uint8_t long_form = head(14, 1);
  EXPECT_EQ(line(k311, {}, 1, 0), std::nullopt);                                // empty table
  EXPECT_EQ(line(k311, {head(0, 1), 0}, 1, 2), std::nullopt);                   // offset past end
  EXPECT_EQ(line(k311, {head(0, 1), 0}, 1, -2), std::nullopt);                  // negative offset
  EXPECT_EQ(line(k311, {long_form, 0x42}, 1, 0), std::nullopt);                 // truncated varint
  EXPECT_EQ(line(k311, {long_form, 0x02, 0, 0}, 1, 0), std::nullopt);           // missing end column
  EXPECT_EQ(line(k311, {head(10, 1), 3}, 1, 0), std::nullopt);                  // missing column byte
  EXPECT_EQ(line(k311, {head(0, 1)}, 1, 0), std::nullopt);                      // missing column byte
  EXPECT_EQ(line(k311, {0x12, head(0, 1), 0}, 1, 0), std::nullopt);             // no header first
  EXPECT_EQ(line(k311, {head(0, 1), 0, 0, 0}, 1, 2), std::nullopt);             // stray body byte
  EXPECT_EQ(line(k311, {long_form, 0x40, head(0, 1), 0}, 1, 0), std::nullopt);  // varint
                                                                                // cut by header
  // A varint longer than any C int needs (7 chunks) is rejected, not shifted past 64 bits.
  EXPECT_EQ(line(k311, {head(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00}, 1, 0), std::nullopt);
  // Line deltas that leave the int range are rejected.
  EXPECT_EQ(line(k311, {head(13, 1), 0x03}, 0, 0), std::nullopt);  // 0 - 1
  EXPECT_EQ(line(k311, {head(13, 1), 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x0f}, 1, 0), std::nullopt);
}

TEST(Locations311, LargestVarintIsAccepted) {
  // svarint +2^31-2 in 6 chunks: the biggest line delta CPython could write.
  const std::uint64_t zigzag = (std::uint64_t{2147483646} << 1);
  Bytes table = {head(13, 1)};
  for (std::uint64_t rest = zigzag;;) {
    const auto chunk = static_cast<std::uint8_t>(rest & 0x3f);
    rest >>= 6;
    table.push_back(rest != 0 ? static_cast<std::uint8_t>(chunk | 0x40) : chunk);
    if (rest == 0) break;
  }
  EXPECT_EQ(table.size(), 7u);
  EXPECT_EQ(line(k311, table, 1, 0), 2147483647);
}

}  // namespace
