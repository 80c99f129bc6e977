// SPDX-License-Identifier: Apache-2.0
// pyebpf dump's pure parts: socket tables, state names, durations, system
// call names, deadlock cycles.
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include "dump/deadlocks.hpp"
#include "dump/syscalls.hpp"
#include "dump/threads.hpp"
#include "dump/waits.hpp"
#include "net/proc_sockets.hpp"
#include "offcpu.h"

namespace pyebpf {
namespace {

TEST(ProcSockets, TcpLinesGiveEndpointsStateAndInode) {
  const char* text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1577 1 0 100 0\n"
      "   1: 0100007F:1F40 0100007F:D4A2 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4\n"
      "   2: 0100007F:9ADD 0100007F:9466 06 00000000:00000000 03:00000DD7 00000000     0        0 0 3 0\n"
      "garbage line\n";
  auto sockets = net::parse_proc_sockets(text, "tcp");
  ASSERT_EQ(sockets.size(), 2u);  // TIME_WAIT has inode 0: no process holds it
  EXPECT_EQ(sockets.at(1577).local, "0.0.0.0:2024");
  EXPECT_EQ(sockets.at(1577).state, "LISTEN");
  EXPECT_EQ(sockets.at(1577).peer, "");
  EXPECT_EQ(sockets.at(4242).local, "127.0.0.1:8000");
  EXPECT_EQ(sockets.at(4242).peer, "127.0.0.1:54434");
  EXPECT_EQ(sockets.at(4242).state, "ESTABLISHED");
  EXPECT_EQ(sockets.at(4242).protocol, "tcp");
}

TEST(ProcSockets, Tcp6AndUnixLines) {
  const char* tcp6 =
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
      "tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C350 01 00000000:00000000 "
      "00:00000000 00000000     0        0 777 1 0 20 4\n";
  auto six = net::parse_proc_sockets(tcp6, "tcp6");
  ASSERT_EQ(six.size(), 1u);
  EXPECT_EQ(six.at(777).local, "[::1]:8080");
  EXPECT_EQ(six.at(777).peer, "[::1]:50000");
  const char* unix_text =
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "00000000d991c544: 00000003 00000000 00000000 0001 03  1573 /run/app.sock\n"
      "000000006ad91c82: 00000003 00000000 00000000 0001 03  1574\n";
  auto unix_sockets = net::parse_proc_sockets(unix_text, "unix");
  ASSERT_EQ(unix_sockets.size(), 2u);
  EXPECT_EQ(unix_sockets.at(1573).local, "/run/app.sock");
  EXPECT_EQ(unix_sockets.at(1574).local, "");
}

TEST(DumpState, RawStateBitsNameTheState) {
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_RUNNING, 0, true), "running");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_RUNNING, 0, false), "runnable");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_INTERRUPTIBLE, 0, false), "sleeping");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_UNINTERRUPTIBLE, 0, false), "uninterruptible");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_UNINTERRUPTIBLE | PYEBPF_TASK_NOLOAD, 0, false), "idle");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_STOPPED, 0, false), "stopped");
  EXPECT_EQ(dump::state_name(PYEBPF_TASK_TRACED, 0, false), "traced");
  EXPECT_EQ(dump::state_name(0, 0x20, false), "zombie");
}

TEST(DumpState, DurationsReadAsPeopleSayThem) {
  EXPECT_EQ(dump::human_duration(0.25), "0.250 ms");
  EXPECT_EQ(dump::human_duration(250), "250 ms");
  EXPECT_EQ(dump::human_duration(12'345), "12.3 s");
  EXPECT_EQ(dump::human_duration(600'000), "10.0 min");
  EXPECT_EQ(dump::human_duration(3 * 3.6e6), "3.0 h");
}

TEST(DumpSyscalls, BlockingCallsAreNamedAndClassified) {
  EXPECT_EQ(dump::syscall_name(SYS_futex), "futex");
  EXPECT_EQ(dump::syscall_kind(SYS_futex), dump::SyscallKind::Futex);
  EXPECT_EQ(dump::syscall_kind(SYS_recvfrom), dump::SyscallKind::FdWait);
  EXPECT_EQ(dump::syscall_kind(SYS_clock_nanosleep), dump::SyscallKind::Sleep);
  EXPECT_EQ(dump::syscall_kind(SYS_epoll_pwait), dump::SyscallKind::Poll);
  EXPECT_EQ(dump::syscall_kind(SYS_wait4), dump::SyscallKind::Child);
  EXPECT_EQ(dump::syscall_name(-1), "");
  EXPECT_EQ(dump::syscall_kind(-1), dump::SyscallKind::Other);
}

dump::DumpedThread thread_waiting_for(pid_t tid, std::optional<pid_t> waits_for) {
  dump::DumpedThread t{};
  t.raw.hdr.tid = static_cast<__u32>(tid);
  t.waits_for = waits_for;
  return t;
}

TEST(DumpDeadlocks, ACycleOfWaitsIsFoundFromEachOfItsThreadsOnly) {
  std::vector<dump::DumpedProcess> processes(1);
  auto& threads = processes[0].threads;
  threads.push_back(thread_waiting_for(10, 11));
  threads.push_back(thread_waiting_for(11, 12));
  threads.push_back(thread_waiting_for(12, 10));
  threads.push_back(thread_waiting_for(13, 10));  // waits on the cycle, is not on it
  threads.push_back(thread_waiting_for(14, 99));  // waits on a thread not in the dump
  threads.push_back(thread_waiting_for(15, std::nullopt));
  dump::find_deadlocks(processes);
  EXPECT_EQ(threads[0].deadlock, (std::vector<pid_t>{10, 11, 12}));
  EXPECT_EQ(threads[1].deadlock, (std::vector<pid_t>{11, 12, 10}));
  EXPECT_EQ(threads[2].deadlock, (std::vector<pid_t>{12, 10, 11}));
  EXPECT_TRUE(threads[3].deadlock.empty());
  EXPECT_TRUE(threads[4].deadlock.empty());
  EXPECT_TRUE(threads[5].deadlock.empty());
}

}  // namespace
}  // namespace pyebpf
