// SPDX-License-Identifier: Apache-2.0
#include "python/version.hpp"

#include <gtest/gtest.h>

namespace pyebpf::python {
namespace {

TEST(VersionTest, DecodesPyVersionHex) {
  EXPECT_EQ(version_from_hex(0x030b07f0)->str(), "3.11.7");
  EXPECT_EQ(version_from_hex(0x030b02f0)->str(), "3.11.2");
  EXPECT_EQ(version_from_hex(0x030d00c1)->str(), "3.13.0rc1");
  EXPECT_EQ(version_from_hex(0x030e00a3)->str(), "3.14.0a3");
  EXPECT_EQ(version_from_hex(0x030c01f0)->minor_str(), "3.12");
  EXPECT_FALSE(version_from_hex(0));
  EXPECT_FALSE(version_from_hex(0x030b0700)) << "release level 0 is not valid";
}

TEST(VersionTest, MajorMinorFromFileNames) {
  EXPECT_EQ(version_from_filename("/usr/bin/python3.11")->str(), "3.11");
  EXPECT_EQ(version_from_filename("/x/lib/libpython3.10.so.1.0")->str(), "3.10");
  EXPECT_EQ(version_from_filename("libpython3.7m.so.1.0")->str(), "3.7");
  EXPECT_EQ(version_from_filename("/usr/lib/libpython2.7.so.1.0")->str(), "2.7");
  EXPECT_FALSE(version_from_filename("/usr/bin/python"));
  EXPECT_FALSE(version_from_filename("/usr/bin/gunicorn"));
  EXPECT_FALSE(version_from_filename("/usr/lib/libpythonista.so"));
}

}  // namespace
}  // namespace pyebpf::python
