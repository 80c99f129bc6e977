// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace pyebpf::native {

// What a BPF program on a function still needs where its uprobe fires.
struct ProbeNeeds {
  // The program reads the first `args_read` integer arguments (x86-64:
  // rdi, rsi, rdx, rcx, r8, r9): no instruction before the site may write them.
  int args_read = 0;
  // It may fire after the function's system call instruction, where rax
  // holds the call's result (and rcx, r11 are clobbered). Only for programs
  // that are right either way: after close() the fd may already belong to
  // another thread's new connection, so close's program must run before.
  bool may_follow_syscall = false;
};

// Where a uprobe on a function costs least: the function's first instruction
// that the kernel emulates instead of single-stepping out of line (a second
// trap: ~7 µs against ~1 µs per hit on the development VM). See
// find_probe_site().
struct ProbeSite {
  std::uint64_t offset = 0;    // bytes from the function's first instruction
  bool after_syscall = false;  // the site follows the function's system call: rax is its result
  bool emulated = false;       // false: none qualified, offset 0 (the kernel single-steps it)
  std::string instruction;     // the instruction at the site, for the log ("je 0xf82c0")
};

// The probe site in `code` (the whole function, x86-64): the first
// instruction the kernel emulates (x86 uprobes.c: jmp/jcc/call rel, nop, push
// of a register), provided every instruction before it runs on every call
// (no branch, call or return: they would skip the site or leave it) and
// writes neither the stack pointer (a uretprobe takes the return address from
// [rsp], the kernel emulating `push` needs nothing), memory, nor a register the
// program reads; a system call may be passed only where `needs` allows it, once;
// and no branch anywhere in the function goes back to the site or before it
// (the probe fires at entry only). Falls back to offset 0 when nothing
// qualifies or the function does not decode to its end. The first instruction
// is always a valid site: probes at offset 0 attach as before.
//
// E.g. glibc 2.36's read: `cmpb $0x0,__libc_single_threaded(%rip)` (single-
// stepped: rip-relative) then `je` at +7; epoll_ctl: `mov %rcx,%r10; mov
// $0xe9,%eax; syscall; cmp; jae` gives +16, after the system call.
ProbeSite find_probe_site(std::span<const std::uint8_t> code, const ProbeNeeds& needs);

}  // namespace pyebpf::native
