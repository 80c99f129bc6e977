/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Thread dump: every thread of the target processes at one moment, read by a
 * sleepable BPF task iterator (bpf/thread_dump.bpf.c) without stopping them
 * or attaching anything to them: what each one is doing, and since when.
 * Shared between the iterator and user space (src/dump/).
 */
#ifndef PYEBPF_THREAD_DUMP_H
#define PYEBPF_THREAD_DUMP_H

#include "python.h"

/* Frames kept per native stack. */
#define PYEBPF_DUMP_KERNEL_FRAMES 48
#define PYEBPF_DUMP_USER_FRAMES	  32

struct pyebpf_dump_native_stack {
	__u32 depth; /* ips[0..depth) valid, leaf first */
	__u32 pad;
	__u64 ips[PYEBPF_DUMP_KERNEL_FRAMES];
};

/* What the iterator knows of `since_ns`. */
enum pyebpf_dump_since {
	PYEBPF_DUMP_SINCE_UNKNOWN = 0,	 /* the kernel keeps no timestamps for it (no CONFIG_SCHED_INFO) */
	PYEBPF_DUMP_SINCE_SWITCH_IN = 1, /* running: since it was last switched in */
	PYEBPF_DUMP_SINCE_QUEUED = 2,	 /* runnable: since it was queued to run */
	PYEBPF_DUMP_SINCE_LEFT = 3,	 /* asleep: since it last left the CPU */
	PYEBPF_DUMP_SINCE_UPPER = 4,	 /* asleep, a real-time task: since it last ran (an upper bound) */
};

/* One thread, as the iterator writes it (bpf_seq_write), fixed size. */
struct pyebpf_thread_dump {
	struct pyebpf_event_header hdr; /* ts_ns: when it was read; cpu: the CPU it last ran on */
	__u32 state;			/* task->__state: raw bits, as offcpu's prev_state */
	__u32 exit_state;
	__u32 on_cpu;	  /* running at that moment */
	__u32 since_kind; /* enum pyebpf_dump_since */
	__u64 since_ns;	  /* how long it has been in its state */
	__u64 voluntary_switches;
	__u64 involuntary_switches;
	__s64 syscall; /* the system call it is in, from its saved registers; < 0: none */
	__u64 args[6]; /* its arguments */
	__u64 user_sp;
	struct pyebpf_dump_native_stack kstack;
	/* user stack: the saved instruction pointer, then return addresses along
	 * frame pointers while they lead up the stack (cut short in code built
	 * without them); user space keeps those in executable mappings */
	struct pyebpf_dump_native_stack ustack;
	__u64 py_frames[PYEBPF_MAX_FRAMES]; /* the address of py.frames[i]'s frame */
	struct pyebpf_py_stack py;
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_dump_native_stack) == 8 + 8 * PYEBPF_DUMP_KERNEL_FRAMES,
		     "dump native stack layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_thread_dump) ==
			     sizeof(struct pyebpf_event_header) + 104 + 2 * sizeof(struct pyebpf_dump_native_stack) +
				     8 * PYEBPF_MAX_FRAMES + sizeof(struct pyebpf_py_stack),
		     "thread dump layout");

#endif /* PYEBPF_THREAD_DUMP_H */
