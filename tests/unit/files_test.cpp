// SPDX-License-Identifier: Apache-2.0
#include "util/files.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace pyebpf {
namespace {

// A forked child is listed until it is reaped; an unknown pid has none.
TEST(ChildrenOf, ListsForkedChildrenUntilReaped) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    close(pipe_fds[1]);
    (void)!read(pipe_fds[0], &c, 1);  // until the parent closes its end
    _exit(0);
  }
  close(pipe_fds[0]);
  auto children = children_of(getpid());
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
  close(pipe_fds[1]);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  children = children_of(getpid());
  EXPECT_EQ(std::find(children.begin(), children.end(), child), children.end());
  EXPECT_TRUE(children_of(-1).empty());
}

}  // namespace
}  // namespace pyebpf
