// SPDX-License-Identifier: Apache-2.0
#include "python/unicode.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace pyebpf::python {
namespace {

std::vector<std::uint8_t> units(std::initializer_list<std::uint32_t> cps, unsigned kind) {
  std::vector<std::uint8_t> out;
  for (auto cp : cps)
    for (unsigned i = 0; i < kind; ++i) out.push_back(static_cast<std::uint8_t>(cp >> (8 * i)));
  return out;
}

TEST(UnicodeTest, EveryStorageKindBecomesUtf8) {
  EXPECT_EQ(code_units_to_utf8(units({'a', 'b'}, 1), 1), "ab");
  EXPECT_EQ(code_units_to_utf8(units({'f', 'u', 'n', 0xe9}, 1), 1), "fun\xc3\xa9") << "Latin-1 kind";
  EXPECT_EQ(code_units_to_utf8(units({0x8a08, 0x7b97}, 2), 2), "計算") << "UCS-2 kind";
  EXPECT_EQ(code_units_to_utf8(units({0x1f40d, 'x'}, 4), 4), "🐍x") << "UCS-4 kind";
}

TEST(UnicodeTest, LoneSurrogatesAndOutOfRangeBecomeReplacement) {
  EXPECT_EQ(code_units_to_utf8(units({0xd800}, 2), 2), "\xef\xbf\xbd");
  EXPECT_EQ(code_units_to_utf8(units({0x110000}, 4), 4), "\xef\xbf\xbd");
  EXPECT_EQ(code_units_to_utf8(units({'a'}, 3), 3), "") << "invalid kind";
}

TEST(UnicodeTest, SanitizeKeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(sanitize_utf8("données_🐍"), "données_🐍");
  EXPECT_EQ(sanitize_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(sanitize_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd") << "overlong form";
  EXPECT_EQ(sanitize_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") << "encoded surrogate";
  EXPECT_EQ(sanitize_utf8("\xe8\xa8"), "\xef\xbf\xbd\xef\xbf\xbd") << "truncated sequence";
}

}  // namespace
}  // namespace pyebpf::python
