// SPDX-License-Identifier: Apache-2.0
#include "procfs/maps.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "pyebpf/error.hpp"

namespace pyebpf::procfs {
namespace {

TEST(MapsTest, ParsesFileBackedAnonymousAndDeletedMappings) {
  const char* text =
      "00400000-00425000 r--p 00000000 fd:00 1311267                            /usr/bin/python3.11\n"
      "7f5de3200000-7f5de3300000 r-xp 00120000 08:01 42   /opt/my dir/libpython3.11.so.1.0\n"
      "7f5de3400000-7f5de3401000 rw-p 00000000 00:00 0 \n"
      "7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f0000000000-7f0000001000 r-xp 00001000 08:01 77 /tmp/old.so (deleted)\n"
      "garbage line\n";
  auto maps = parse_maps(text);
  ASSERT_EQ(maps.size(), 5u);

  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x425000u);
  EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
  EXPECT_EQ(maps[0].inode, 1311267u);
  EXPECT_TRUE(maps[0].file_backed());
  EXPECT_FALSE(maps[0].executable());

  EXPECT_EQ(maps[1].offset, 0x120000u);
  EXPECT_EQ(maps[1].path, "/opt/my dir/libpython3.11.so.1.0") << "paths may contain spaces";
  EXPECT_TRUE(maps[1].executable());

  EXPECT_FALSE(maps[2].file_backed());
  EXPECT_EQ(maps[3].path, "[stack]");
  EXPECT_FALSE(maps[3].file_backed());

  EXPECT_TRUE(maps[4].deleted);
  EXPECT_EQ(maps[4].path, "/tmp/old.so");
  EXPECT_EQ(host_path(1234, maps[4]), "/proc/1234/map_files/7f0000000000-7f0000001000");
  EXPECT_EQ(host_path(1234, maps[0]), "/proc/1234/root/usr/bin/python3.11");
}

TEST(MapsTest, ReadsOwnMaps) {
  auto maps = read_maps(getpid());
  EXPECT_FALSE(maps.empty());
}

TEST(MapsTest, MissingProcessIsAClearError) {
  try {
    read_maps(0x3fffffff);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pyebpf::procfs
