/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF-only: system call numbers and register access for the raw syscall
 * tracepoints (sys_enter/sys_exit), per architecture. Trackers filter on these
 * first, since those tracepoints fire for every system call on the machine
 * (and only opt-in modes load them: see tcp_accept_exit).
 */
#ifndef PYEBPF_SYSCALLS_BPF_H
#define PYEBPF_SYSCALLS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

#if defined(__TARGET_ARCH_x86)
#define NR_accept		43
#define NR_accept4		288
/* regs of tp_btf programs are trusted pointers: a plain load. */
#define SYSCALL_NR(regs)	((regs)->orig_ax)
/* The first argument is still in its register at sys_exit. */
#define SYSCALL_ARG0_CORE(regs) BPF_CORE_READ(regs, di)
#elif defined(__TARGET_ARCH_arm64)
#define NR_accept		202
#define NR_accept4		242
#define SYSCALL_NR(regs)	((regs)->syscallno)
/* x0 holds the return value at sys_exit; orig_x0 the first argument. */
#define SYSCALL_ARG0_CORE(regs) BPF_CORE_READ(regs, orig_x0)
#else
#error "pyebpf: syscall numbers not known for this architecture"
#endif

#endif /* PYEBPF_SYSCALLS_BPF_H */
