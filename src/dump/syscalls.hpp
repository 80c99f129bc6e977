// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace pyebpf::dump {

// What a blocking system call waits on, by how its arguments name it.
enum class SyscallKind {
  Other,
  FdWait,  // its first argument is the file descriptor it waits on (read, recv*, accept*, connect...)
  Sleep,   // nanosleep, clock_nanosleep
  Poll,    // poll, ppoll, select, pselect6, epoll_wait*
  Futex,   // futex: its first argument is the futex word's address
  Child,   // wait4, waitid
};

// The name of system call `nr` of this architecture ("futex"), "" if it is
// not one of those a thread is commonly found blocked in (or nr < 0).
std::string_view syscall_name(long nr);
SyscallKind syscall_kind(long nr);

}  // namespace pyebpf::dump
