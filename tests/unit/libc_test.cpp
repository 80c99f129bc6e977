// SPDX-License-Identifier: Apache-2.0
#include "native/libc.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>

namespace pyebpf::native {
namespace {

TEST(LibcTest, RanksOldGlibcsLibpthreadFirstAndNothingElseAsACLibrary) {
  EXPECT_EQ(c_library_rank("libpthread.so.0"), 0);
  EXPECT_EQ(c_library_rank("libpthread-2.31.so"), 0);
  EXPECT_EQ(c_library_rank("libc.so.6"), 1);
  EXPECT_EQ(c_library_rank("libc-2.31.so"), 1);
  EXPECT_EQ(c_library_rank("ld-musl-x86_64.so.1"), 1);
  EXPECT_EQ(c_library_rank("libc.musl-x86_64.so.1"), 1);
  for (const char* other : {"libc++.so.1", "libcap.so.2", "libcrypto.so.3", "libcurl.so.4", "python3.11"})
    EXPECT_EQ(c_library_rank(other), -1) << other;
}

// This test's own process: where the dynamic linker bound read() and
// accept4() must be where libc_functions() says a uprobe goes.
TEST(LibcTest, FindsTheFunctionsThisProcessCallsAtTheirFileOffsets) {
  std::vector<std::string> unreadable;
  auto functions = libc_functions(getpid(), {"read", "accept4", "pyebpf_no_such_function"}, unreadable);
  EXPECT_TRUE(unreadable.empty()) << unreadable.front();
  for (const char* name : {"read", "accept4"}) {
    SCOPED_TRACE(name);
    auto address = reinterpret_cast<std::uint64_t>(dlsym(RTLD_DEFAULT, name));
    ASSERT_NE(address, 0u);
    const auto maps = procfs::read_maps(getpid());
    const procfs::Mapping* holder = nullptr;
    for (const auto& m : maps) {
      if (address >= m.start && address < m.end) holder = &m;
    }
    ASSERT_NE(holder, nullptr);
    const std::uint64_t file_offset = address - holder->start + holder->offset;
    int found = 0;
    for (const auto& f : functions) {
      if (f.name != name || f.mapped_path != holder->path) continue;
      ++found;
      EXPECT_EQ(f.offset, file_offset) << "file offset of the bound function";
      EXPECT_EQ(f.open_path, procfs::open_path(getpid(), *holder));
    }
    EXPECT_EQ(found, 1);
  }
  for (const auto& f : functions) EXPECT_NE(f.name, "pyebpf_no_such_function");
}

// A C library that cannot be read is named with its error, so that a probe
// that finds no function can say why instead of guessing "a static build".
TEST(LibcTest, UnreadableFilesAreReportedWithTheirErrors) {
  std::vector<std::string> unreadable;
  auto functions = libc_functions_in({{"/nonexistent/libc.so.6", "/lib/libc.so.6"}}, {"read"}, unreadable);
  EXPECT_TRUE(functions.empty());
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].rfind("/lib/libc.so.6: ", 0), 0u) << unreadable[0];
  EXPECT_NE(unreadable[0].find("/nonexistent/libc.so.6"), std::string::npos) << unreadable[0];
}

}  // namespace
}  // namespace pyebpf::native
