// SPDX-License-Identifier: Apache-2.0
#include "procfs/maps.hpp"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

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
  EXPECT_EQ(maps[0].dev, makedev(0xfd, 0));
  EXPECT_EQ(maps[1].dev, makedev(8, 1));
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
  EXPECT_EQ(open_path(1234, maps[4]), "/proc/1234/map_files/7f0000000000-7f0000001000")
      << "a deleted file is only reachable as the mapping";
}

TEST(MapsTest, OpensTheMappedFileWhereverItsPathLeads) {
  auto maps = read_maps(getpid());
  ASSERT_FALSE(maps.empty());
  const std::string self = "/proc/" + std::to_string(getpid());
  const Mapping* exe = nullptr;
  for (const auto& m : maps) {
    if (m.file_backed() && m.executable() && m.path == std::filesystem::read_symlink("/proc/self/exe").string())
      exe = &m;
  }
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(open_path(getpid(), *exe), self + "/root" + exe->path) << "the host's own file, checked by inode";
  EXPECT_EQ(file_id(open_path(getpid(), *exe)), (FileId{exe->dev, exe->inode}));

  // A path that leads to another file (what /proc/PID/root/<host path> gives
  // for a process in a plain chroot) is not taken: the mapping is opened.
  Mapping moved = *exe;
  moved.path = "/etc/hostname";
  EXPECT_EQ(open_path(getpid(), moved).rfind(self + "/map_files/", 0), 0u) << open_path(getpid(), moved);
  if (geteuid() == 0) {  // following map_files links takes CAP_SYS_ADMIN (pyebpf runs as root)
    EXPECT_EQ(file_id(open_path(getpid(), moved)), (FileId{exe->dev, exe->inode}));
  }
  EXPECT_EQ(target_path(getpid(), exe->path), exe->path) << "not chrooted";
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
