// SPDX-License-Identifier: Apache-2.0
#include "dump/syscalls.hpp"

#include <sys/syscall.h>

namespace pyebpf::dump {
namespace {

struct Entry {
  long nr;
  std::string_view name;
  SyscallKind kind;
};

// The numbers come from this architecture's <sys/syscall.h>; a call that it
// lacks (arm64 has no poll, select, epoll_wait...) is left out.
// A macro per line, which clang-format would indent as one statement.
// clang-format off
constexpr Entry kSyscalls[] = {
#define PYEBPF_SYSCALL(name, kind) {SYS_##name, #name, SyscallKind::kind},
#ifdef SYS_read
    PYEBPF_SYSCALL(read, FdWait)
#endif
#ifdef SYS_readv
    PYEBPF_SYSCALL(readv, FdWait)
#endif
#ifdef SYS_pread64
    PYEBPF_SYSCALL(pread64, FdWait)
#endif
#ifdef SYS_write
    PYEBPF_SYSCALL(write, FdWait)
#endif
#ifdef SYS_writev
    PYEBPF_SYSCALL(writev, FdWait)
#endif
#ifdef SYS_recvfrom
    PYEBPF_SYSCALL(recvfrom, FdWait)
#endif
#ifdef SYS_recvmsg
    PYEBPF_SYSCALL(recvmsg, FdWait)
#endif
#ifdef SYS_recvmmsg
    PYEBPF_SYSCALL(recvmmsg, FdWait)
#endif
#ifdef SYS_sendto
    PYEBPF_SYSCALL(sendto, FdWait)
#endif
#ifdef SYS_sendmsg
    PYEBPF_SYSCALL(sendmsg, FdWait)
#endif
#ifdef SYS_accept
    PYEBPF_SYSCALL(accept, FdWait)
#endif
#ifdef SYS_accept4
    PYEBPF_SYSCALL(accept4, FdWait)
#endif
#ifdef SYS_connect
    PYEBPF_SYSCALL(connect, FdWait)
#endif
#ifdef SYS_flock
    PYEBPF_SYSCALL(flock, FdWait)
#endif
#ifdef SYS_fsync
    PYEBPF_SYSCALL(fsync, FdWait)
#endif
#ifdef SYS_fdatasync
    PYEBPF_SYSCALL(fdatasync, FdWait)
#endif
#ifdef SYS_ioctl
    PYEBPF_SYSCALL(ioctl, FdWait)
#endif
#ifdef SYS_nanosleep
    PYEBPF_SYSCALL(nanosleep, Sleep)
#endif
#ifdef SYS_clock_nanosleep
    PYEBPF_SYSCALL(clock_nanosleep, Sleep)
#endif
#ifdef SYS_poll
    PYEBPF_SYSCALL(poll, Poll)
#endif
#ifdef SYS_ppoll
    PYEBPF_SYSCALL(ppoll, Poll)
#endif
#ifdef SYS_select
    PYEBPF_SYSCALL(select, Poll)
#endif
#ifdef SYS_pselect6
    PYEBPF_SYSCALL(pselect6, Poll)
#endif
#ifdef SYS_epoll_wait
    PYEBPF_SYSCALL(epoll_wait, Poll)
#endif
#ifdef SYS_epoll_pwait
    PYEBPF_SYSCALL(epoll_pwait, Poll)
#endif
#ifdef SYS_epoll_pwait2
    PYEBPF_SYSCALL(epoll_pwait2, Poll)
#endif
#ifdef SYS_futex
    PYEBPF_SYSCALL(futex, Futex)
#endif
#ifdef SYS_futex_waitv
    PYEBPF_SYSCALL(futex_waitv, Other)
#endif
#ifdef SYS_wait4
    PYEBPF_SYSCALL(wait4, Child)
#endif
#ifdef SYS_waitid
    PYEBPF_SYSCALL(waitid, Child)
#endif
#ifdef SYS_pause
    PYEBPF_SYSCALL(pause, Other)
#endif
#ifdef SYS_rt_sigsuspend
    PYEBPF_SYSCALL(rt_sigsuspend, Other)
#endif
#ifdef SYS_rt_sigtimedwait
    PYEBPF_SYSCALL(rt_sigtimedwait, Other)
#endif
#ifdef SYS_io_getevents
    PYEBPF_SYSCALL(io_getevents, Other)
#endif
#ifdef SYS_io_uring_enter
    PYEBPF_SYSCALL(io_uring_enter, Other)
#endif
#ifdef SYS_openat
    PYEBPF_SYSCALL(openat, Other)
#endif
#ifdef SYS_sched_yield
    PYEBPF_SYSCALL(sched_yield, Other)
#endif
#undef PYEBPF_SYSCALL
};
// clang-format on

const Entry* find(long nr) {
  if (nr < 0) return nullptr;
  for (const auto& e : kSyscalls)
    if (e.nr == nr) return &e;
  return nullptr;
}

}  // namespace

std::string_view syscall_name(long nr) {
  const Entry* e = find(nr);
  return e ? e->name : std::string_view();
}

SyscallKind syscall_kind(long nr) {
  const Entry* e = find(nr);
  return e ? e->kind : SyscallKind::Other;
}

}  // namespace pyebpf::dump
