/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * offcpu tracker: why target threads leave the CPU. Shared between
 * bpf/offcpu.bpf.c and src/trackers/offcpu.cpp.
 *
 * Per thread of a target process, sched_switch (switch-out) records when and
 * in which state it left plus three stacks taken in its own context (kernel,
 * user, Python); sched_switch (switch-in) closes the period: off-CPU =
 * switch-out -> wake-up, run queue = wake-up -> running, the run-queue part
 * read from the kernel's own accounting of the thread (sched_info), or where
 * the kernel lacks it marked by sched_waking. A preemption (the thread stayed
 * runnable) is run-queue time only. Per-event mode sends one pyebpf_offcpu_event per sleep above the
 * threshold; aggregated mode adds each sleep to a per-(thread, stacks) entry in
 * BPF maps that user space drains once per interval.
 */
#ifndef PYEBPF_OFFCPU_H
#define PYEBPF_OFFCPU_H

#include "python.h"

/* Native frames kept per stack: --offcpu-max-stack-depth is 1..this. One more
 * frame is requested from the kernel to tell "exactly N frames" from "cut at N",
 * and kernel stacks get PYEBPF_OFFCPU_KSTACK_SLACK more for the frames of the
 * tracing machinery itself (the BPF program, bpf_trace_run*), which user space
 * drops before applying the limit. */
#define PYEBPF_OFFCPU_MAX_NATIVE   64
#define PYEBPF_OFFCPU_KSTACK_SLACK 7
#define PYEBPF_OFFCPU_NATIVE_SLOTS (PYEBPF_OFFCPU_MAX_NATIVE + 1 + PYEBPF_OFFCPU_KSTACK_SLACK)

/* Per-event mode: BPF wakes the reader once this much is waiting in the ring
 * buffer; the reader also drains it every PYEBPF_OFFCPU_POLL_MS. */
#define PYEBPF_OFFCPU_WAKEUP_BYTES (256 * 1024)
#define PYEBPF_OFFCPU_POLL_MS	   100

/* Raw task states (include/linux/sched.h, stable since 4.14 for these bits). */
#define PYEBPF_TASK_RUNNING	    0x0000
#define PYEBPF_TASK_INTERRUPTIBLE   0x0001
#define PYEBPF_TASK_UNINTERRUPTIBLE 0x0002
#define PYEBPF_TASK_STOPPED	    0x0004
#define PYEBPF_TASK_TRACED	    0x0008
#define PYEBPF_TASK_PARKED	    0x0040
#define PYEBPF_TASK_DEAD	    0x0080
#define PYEBPF_TASK_NOLOAD	    0x0400
#define PYEBPF_TASK_RTLOCK_WAIT	    0x1000
#define PYEBPF_TASK_REPORT	    0x007f /* the bits `ps`/sched_switch report as letters */

/* Where a thread is in its off-CPU cycle (struct pyebpf_offcpu_thread.phase). */
enum pyebpf_offcpu_phase {
	PYEBPF_OFFCPU_RUNNING = 0,   /* on CPU, or not seen leaving it yet */
	PYEBPF_OFFCPU_SLEEPING = 1,  /* switched out asleep, waiting for a wake-up */
	PYEBPF_OFFCPU_WOKEN = 2,     /* woken, waiting in the run queue */
	PYEBPF_OFFCPU_PREEMPTED = 3, /* switched out while runnable: run queue only */
	PYEBPF_OFFCPU_NEW = 4,	     /* new thread waiting for its first run */
	PYEBPF_OFFCPU_CAPTURE = 5,   /* switched back in after a sleep to report: its stacks are
					taken when it resumes, in its own context (sched_exit_tp) */
};

/* Where stacks are taken (rodata targ_capture). */
enum pyebpf_offcpu_capture {
	/* In the sleeper's own context when it resumes (tracepoint sched_exit_tp at
	 * the end of __schedule, Linux >= 6.16): only for sleeps that are reported,
	 * once their length is known. Its kernel, user and Python stacks are still
	 * those it went to sleep with: it has not returned to user space yet. */
	PYEBPF_OFFCPU_CAPTURE_AT_RESUME = 0,
	/* At switch-out, for every sleep, kept per thread until the wake-up tells
	 * whether to report it (kernels without sched_exit_tp). */
	PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT = 1,
};

/* Tracker counters (slots after the common ones in bpf/common.h). */
enum pyebpf_offcpu_counter {
	PYEBPF_OFFCPU_CNT_SLEEPS = PYEBPF_CNT_TRACKER_BASE, /* voluntary switch-outs of target threads */
	PYEBPF_OFFCPU_CNT_OFF_NS,			    /* sum of off-CPU ns over every sleep (filtered or not) */
	PYEBPF_OFFCPU_CNT_PREEMPTIONS,			    /* switch-outs while runnable */
	PYEBPF_OFFCPU_CNT_PREEMPT_RUNQ_NS,		    /* run-queue ns after preemptions and new-thread starts */
	PYEBPF_OFFCPU_CNT_NO_WAKEUP,			    /* switched in with no wake-up seen: a sleep cancelled by a
					   pending signal (before Linux 6.12 it still shows as S), a
					   wake-up while it was still switching out, or a wake-up the
					   kernel did not run our hook for; run-queue time */
	PYEBPF_OFFCPU_CNT_NO_RECORD,			    /* no thread record (map full/evicted): the sleep is lost */
	PYEBPF_OFFCPU_CNT_AGG_FULL,			    /* aggregation or stack map full: the sleep is lost */
	PYEBPF_OFFCPU_CNT_KSTACK_FAIL,			    /* kernel stack could not be taken */
	PYEBPF_OFFCPU_CNT_USTACK_FAIL,			    /* user stack could not be taken (empty) */
	PYEBPF_OFFCPU_CNT_AGGREGATED,			    /* sleeps added to an aggregation entry */
	PYEBPF_OFFCPU_CNT_CAPTURE_MISSED,		    /* a sleep to report whose thread left again before
					     its stacks were taken: lost */
	PYEBPF_OFFCPU_CNT_REPORTED,			    /* sleeps at or above the threshold */
	PYEBPF_OFFCPU_CNT_END_UNSEEN,			    /* a thread left the CPU again although BPF never saw it
					   come back: the kernel skipped our hooks for that switch-in
					   (and its wake-up); that period is lost */
	PYEBPF_OFFCPU_CNT_START_UNSEEN,			    /* a thread came back to the CPU although BPF never saw it
					   leave: the kernel skipped our hooks for that switch-out; that
					   period (a sleep or a preemption) is lost */
};

/* A native stack, leaf first as the kernel unwinds it. User space drops the
 * tracing frames, cuts it at the limit (marking the cut) and prints it root first. */
struct pyebpf_offcpu_native_stack {
	__u32 depth; /* ips[0..depth) valid */
	__u32 pad;
	__u64 ips[PYEBPF_OFFCPU_NATIVE_SLOTS];
};

/* Per-event mode: one per sleep with off_ns >= the threshold. */
struct pyebpf_offcpu_event {
	struct pyebpf_event_header hdr; /* ts_ns = switch-out; cpu = CPU it resumed on */
	__u64 off_ns;			/* switch-out -> wake-up */
	__u64 runq_ns;			/* wake-up -> switch-in */
	__u32 prev_state;		/* raw task state at switch-out */
	__u32 pad;
	struct pyebpf_offcpu_native_stack kstack;
	struct pyebpf_offcpu_native_stack ustack;
	struct pyebpf_py_stack py; /* last: only PYEBPF_STACK_BYTES(py.depth) of it are sent */
};

/*
 * On the wire (the ring buffer) an event is packed: its fields up to kstack,
 * then each native stack as its depth and pad words and only `depth` ips,
 * then PYEBPF_STACK_BYTES(py.depth) of the Python stack. A sleeping thread's
 * stacks fill ~25 and ~20 of their PYEBPF_OFFCPU_NATIVE_SLOTS slots: packed,
 * an event is ~600 bytes instead of ~1.4 KB, so a ring holds 2-3 times more
 * of them while the reader is away (a burst of 20,000 sleeps/s at attach lost
 * events with full-size ones).
 */
#define PYEBPF_OFFCPU_FIXED_BYTES	  __builtin_offsetof(struct pyebpf_offcpu_event, kstack)
#define PYEBPF_OFFCPU_NATIVE_BYTES(depth) (8 + 8 * (__u64)(depth))
/* The smallest packed event: both native stacks and the Python stack empty. */
#define PYEBPF_OFFCPU_MIN_WIRE_BYTES                                                                                   \
	(PYEBPF_OFFCPU_FIXED_BYTES + 2 * PYEBPF_OFFCPU_NATIVE_BYTES(0) + PYEBPF_STACK_BYTES(0))

/* Per target thread (map `threads`, key host tid): the open off-CPU period. */
struct pyebpf_offcpu_thread {
	__u64 off_ts;  /* switch-out time */
	__u64 runq_ts; /* wake-up (or preemption) time */
	__u64 off_ns;  /* set at switch-in when a sleep is to be reported */
	__u64 runq_ns;
	__u32 phase;	  /* enum pyebpf_offcpu_phase */
	__u32 prev_state; /* raw task state at switch-out */
	__u64 run_delay;  /* the kernel's sched_info.run_delay at switch-out (targ_runq_from_kernel) */
};

/*
 * Aggregated mode. Every key carries the interval generation `gen` (a .bss
 * variable user space bumps at each interval): BPF adds to the current one,
 * user space drains and deletes the older ones, so the maps never fill up with
 * history however long pyebpf runs. Stacks are stored once per generation under
 * a 64-bit hash of their content (0 = no stack).
 */
struct pyebpf_offcpu_agg_key {
	__u32 gen;
	__u32 pid;
	__u32 tid;
	__u32 prev_state; /* 0 (R) for run-queue time after preemptions */
	__u64 kstack;
	__u64 ustack;
	__u64 pystack;
};

struct pyebpf_offcpu_agg_value {
	struct pyebpf_event_header hdr; /* identity; ts_ns of the first sleep in the interval */
	__u64 off_ns;			/* total */
	__u64 runq_ns;			/* total */
	__u64 count;
	__u64 max_off_ns;
};

struct pyebpf_offcpu_stack_key {
	__u32 gen;
	__u32 pad;
	__u64 hash;
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_native_stack) == 8 + 8 * PYEBPF_OFFCPU_NATIVE_SLOTS,
		     "native stack layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_event) == sizeof(struct pyebpf_event_header) + 24 +
								   2 * sizeof(struct pyebpf_offcpu_native_stack) +
								   sizeof(struct pyebpf_py_stack),
		     "offcpu event layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_thread) == 48, "offcpu thread layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_agg_key) == 40, "offcpu agg key layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_agg_value) == sizeof(struct pyebpf_event_header) + 32,
		     "offcpu agg value layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_offcpu_stack_key) == 16, "offcpu stack key layout");

#endif /* PYEBPF_OFFCPU_H */
