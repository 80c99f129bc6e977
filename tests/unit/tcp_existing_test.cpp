// SPDX-License-Identifier: Apache-2.0
// tcp::in_netns: work in a target's network namespace never moves the
// caller's thread, which later opens the sinks' connections.
#include "trackers/tcp/tcp_existing.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"

namespace pyebpf::trackers::tcp {
namespace {

std::uint64_t inode(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST(InNetns, TheCallersThreadNeverChangesNamespace) {
  // A namespace of its own, made by a thread that ends: its fd keeps it.
  Fd other;
  int err = 0;
  std::thread([&] {
    if (unshare(CLONE_NEWNET)) {
      err = errno;
      return;
    }
    other = Fd(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  }).join();
  if (err == EPERM) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs CAP_SYS_ADMIN";
  ASSERT_EQ(err, 0) << std::strerror(err);
  ASSERT_TRUE(other);
  struct stat other_st {};
  ASSERT_EQ(fstat(other.get(), &other_st), 0);

  const std::string caller = "/proc/self/task/" + std::to_string(gettid()) + "/ns/net";
  const std::uint64_t home = inode(caller);
  ASSERT_NE(home, other_st.st_ino);
  std::uint64_t inside = 0, caller_meanwhile = 0;
  in_netns(other.get(), [&] {
    inside = inode("/proc/thread-self/ns/net");
    caller_meanwhile = inode(caller);
  });
  EXPECT_EQ(inside, other_st.st_ino);
  EXPECT_EQ(caller_meanwhile, home);

  EXPECT_THROW(in_netns(other.get(), [] { throw Error("fails inside"); }), Error);
  EXPECT_EQ(inode(caller), home);
}

}  // namespace
}  // namespace pyebpf::trackers::tcp
