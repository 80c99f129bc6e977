/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared between BPF programs and C++: the header every event starts with and
 * the counters every BPF object keeps. Fixed-width types and explicit padding
 * only, so both compilers agree on the layout (checked by _Static_assert here
 * and by a unit test against the BTF of each embedded object).
 */
#ifndef PYEBPF_COMMON_H
#define PYEBPF_COMMON_H

#ifdef __cplusplus
#include <linux/types.h>
#define PYEBPF_STATIC_ASSERT static_assert
#else
#define PYEBPF_STATIC_ASSERT _Static_assert
#endif

#define PYEBPF_COMM_LEN	 16
#define PYEBPF_MAX_PROCS 4096

/* Who and when: filled by pyebpf_fill_header() in task.bpf.h. */
struct pyebpf_event_header {
	__u64 ts_ns;	 /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 thread_id; /* pthread_t of the thread = its thread pointer = threading.get_ident() */
	__u32 pid;	 /* host tgid */
	__u32 tid;	 /* host tid */
	__u32 ns_pid;	 /* tgid in the task's innermost pid namespace (container) */
	__u32 ns_tid;	 /* tid in the task's innermost pid namespace */
	__u32 cpu;
	__u32 pad;
	char comm[PYEBPF_COMM_LEN];
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_event_header) == 56, "event header layout");

/*
 * Set in the attach cookie of a uprobe on a C library function that pyebpf
 * placed after the function's system call instruction (src/native/probe_site.hpp:
 * the first instruction the kernel emulates rather than single-steps may come
 * after it): the arguments are still in their registers, and the return value
 * register holds the call's result.
 */
#define PYEBPF_COOKIE_AFTER_SYSCALL (1ULL << 63)

/*
 * Counters: one per-CPU array per BPF object, summed by user space. Every way an
 * event can be lost or degraded has a slot, so the summary can say exactly why
 * something is missing instead of printing from BPF.
 */
enum pyebpf_counter {
	PYEBPF_CNT_HITS = 0,	   /* hook invocations for target threads */
	PYEBPF_CNT_EVENTS,	   /* events written to the ring buffer */
	PYEBPF_CNT_RINGBUF_FULL,   /* events lost: ring buffer full */
	PYEBPF_CNT_NO_TSTATE,	   /* thread has no Python thread state (native-only thread) */
	PYEBPF_CNT_READ_FAULT,	   /* a read of target memory failed during a stack walk */
	PYEBPF_CNT_TRUNCATED,	   /* Python stack deeper than PYEBPF_MAX_FRAMES */
	PYEBPF_CNT_TSTATE_WALK,	   /* thread state found by walking the thread list (slow path) */
	PYEBPF_CNT_FRAMES_SKIPPED, /* frames that are not Python code (shims, non-code executables) */
	PYEBPF_CNT_FILTERED,	   /* events below a threshold, dropped in BPF by design */
	PYEBPF_CNT_FRAME_LOOP,	   /* a frame chain that leads back to itself (corrupted target) */
	PYEBPF_CNT_TRACKER_BASE,   /* first slot a tracker may use for its own counters */
	PYEBPF_CNT_MAX = 32,
};

#endif /* PYEBPF_COMMON_H */
