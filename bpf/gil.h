/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gil tracker: every contended GIL acquisition of a target thread counted and
 * timed in BPF (gil_stats); one event for each that waited at least
 * --gil-min-wait-ms, with the thread that held the GIL when the wait began
 * (read from the GIL's own state) and both Python stacks.
 */
#ifndef PYEBPF_GIL_H
#define PYEBPF_GIL_H

#include "interval_stats.h"
#include "python.h"

/* Which hook measured a wait; chosen per target process by user space. */
enum pyebpf_gil_hook {
	/* uprobe + uretprobe on CPython's static take_gil() (builds with .symtab). */
	PYEBPF_GIL_HOOK_TAKE_GIL = 1,
	/*
	 * uprobe + uretprobe on the C library's pthread_cond_timedwait(), kept only
	 * when its condition variable is the GIL's (&gil->cond). take_gil() waits
	 * there, and only there, whenever the GIL is taken: works on stripped builds.
	 */
	PYEBPF_GIL_HOOK_COND_WAIT = 2,
	/*
	 * No probe in the target: the scheduler's tracepoints. A target thread
	 * switching out inside a futex wait on the GIL's condition variable or
	 * mutex (the syscall's registers, glibc's pthread_cond_t/pthread_mutex_t
	 * keep their futex words inside the object) waits for the GIL; when it
	 * resumes and finds the GIL free, it takes it. Each GIL hand-off of a
	 * contended target costs its threads no trap (bpf/gil.bpf.c).
	 */
	PYEBPF_GIL_HOOK_SCHED = 3,
};

/*
 * Per target process (gil_procs map, key = host tgid): where the GIL of the
 * main interpreter is and the offsets of the fields read inside it. Offsets
 * come from offsets/cpython.json (struct _gil_runtime_state); the address is
 * _PyRuntime + runtime.gil for 3.8-3.11, and *(main interpreter +
 * interp.ceval_gil) for 3.12+ where each interpreter points at its GIL.
 */
struct pyebpf_gil_proc {
	__u64 gil;		/* &struct _gil_runtime_state */
	__u64 cond;		/* &gil->cond: what take_gil() waits on */
	__u64 mutex;		/* &gil->mutex: what guards it (sched hook) */
	__u16 locked;		/* int: 1 while some thread holds the GIL */
	__u16 last_holder;	/* PyThreadState*: holder while locked */
	__u16 switch_number;	/* unsigned long: +1 each time another thread takes it */
	__u16 tstate_interp;	/* PyThreadState.interp (3.12+), PYEBPF_NO_OFFSET before */
	__u16 interp_ceval_gil; /* PyInterpreterState.ceval.gil (3.12+), PYEBPF_NO_OFFSET before */
	__u8 hook;		/* enum pyebpf_gil_hook attached for this process */
	__u8 pad[5];
	/* --gil-max-events, kept by BPF: the second (bpf_ktime_get_ns() / 1e9)
	 * the count is of and the gil_wait events sent in it, and the same for
	 * the tenth of a second, which may send a tenth of the budget */
	__u64 events_second;
	__u32 events_sent;
	__u32 tenth_sent;
	__u64 events_tenth;
};

/* The GIL fields read at once: all of them lie in the first 32 bytes. */
#define PYEBPF_GIL_STATE_BYTES 32

/* Bytes of a glibc pthread_cond_t, whose futex words (__g_signals, __g_refs)
 * lie inside it: a futex wait at &gil->cond + [0, this) is a wait on the
 * GIL's condition variable (sched hook). */
#define PYEBPF_GIL_COND_BYTES 48

/* Tracker counters, after the common ones (enum pyebpf_counter). */
enum pyebpf_gil_counter {
	PYEBPF_GIL_CNT_HOLDER_UNKNOWN = PYEBPF_CNT_TRACKER_BASE, /* GIL free at the start (lost a race) */
	PYEBPF_GIL_CNT_HOLDER_NO_TID,				 /* holder's thread not found in thread_ids */
	PYEBPF_GIL_CNT_HOLDER_GONE,    /* holder's thread state no longer valid at the stack walk */
	PYEBPF_GIL_CNT_STACKS_SKIPPED, /* reported waits below --gil-py-min-ms: no stack walk */
	PYEBPF_GIL_CNT_OTHER_INTERP,   /* waits on a subinterpreter's own GIL (3.12+), not tracked */
	PYEBPF_GIL_CNT_STALE,	       /* wait records dropped as stale (missed end of a wait) */
	PYEBPF_GIL_CNT_STATE_FAULT,    /* the GIL state could not be read */
	PYEBPF_GIL_CNT_NO_TOTALS,      /* waits not counted: no gil_stats entry for the target */
	PYEBPF_GIL_CNT_END_UNSEEN,     /* sched hook: a wait whose thread took the GIL without a resume that showed
				      it free: reported from its next switch-out, without stacks */
	PYEBPF_GIL_CNT_RATE_LIMITED,   /* waits >= --gil-min-wait-ms not sent: --gil-max-events per second reached */
};

struct pyebpf_gil_event {
	struct pyebpf_event_header hdr; /* the waiter; ts_ns = when the wait began */
	__u64 duration_ns;
	__u64 holder_tstate;	/* PyThreadState* holding the GIL when the wait began, 0 if unknown */
	__u64 holder_thread_id; /* its pthread_t = threading ident, 0 if unknown */
	__u32 holder_tid;	/* host tid, 0 if unknown */
	__u32 holder_ns_tid;	/* tid in the holder's innermost pid namespace */
	__u32 holder_changes;	/* times another thread took the GIL during the wait */
	__u8 hook;		/* enum pyebpf_gil_hook */
	__u8 pad[3];
	struct pyebpf_py_stack waiter_stack;
	struct pyebpf_py_stack holder_stack; /* last: only PYEBPF_STACK_BYTES(depth) of it are sent */
};

#define PYEBPF_GIL_EVENT_FIXED_BYTES	     (sizeof(struct pyebpf_gil_event) - sizeof(struct pyebpf_py_stack))
#define PYEBPF_GIL_EVENT_BYTES(holder_depth) (PYEBPF_GIL_EVENT_FIXED_BYTES + PYEBPF_STACK_BYTES(holder_depth))

/* While events stream in, BPF wakes the reader at most once per
 * PYEBPF_GIL_WAKEUP_GAP_NS (or once a quarter of the ring is waiting); a lone
 * event at once. The reader also drains every PYEBPF_GIL_POLL_MS, for the
 * tail of a stream. A wakeup per event cost the 500-thread convoy ~650
 * wakeups/s, three system calls each (strace -c). */
#define PYEBPF_GIL_WAKEUP_GAP_NS (10 * 1000 * 1000)
#define PYEBPF_GIL_POLL_MS	 50

/* A wait in progress (BPF only): per host tid (uprobe hooks), or the gil part
 * of the thread's record (sched hook, thread_record.bpf.h). */
struct pyebpf_gil_wait {
	/* What a resume reads and writes first, together (one cache line). */
	__u64 start_ns;
	__u8 in_cond; /* cond_wait: inside pthread_cond_timedwait on the GIL; sched: asleep on the GIL */
	__u8 pad[7];
	__u64 last_ns; /* cond_wait: last return that found the GIL still locked; sched: last resume */
	__u64 wake_sn; /* sched: the switch number at the last resume */
	__u64 self;    /* sched: this thread's PyThreadState, 0 until needed */
	__u64 holder_tstate;
	__u64 holder_thread_id; /* sched: read when the wait is reported */
	__u64 switch_number;	/* at the start */
	__u64 nvcsw;		/* take_gil: the thread's voluntary context switches at entry */
	__u32 holder_tid;
	__u32 holder_ns_tid;
};

/* Key and value of thread_ids: which host thread has a given thread pointer. */
struct pyebpf_gil_thread_key {
	__u32 tgid;
	__u32 pad;
	__u64 thread_id; /* thread pointer = pthread_t = PyThreadState.thread_id */
};

struct pyebpf_gil_thread {
	__u32 tid;
	__u32 ns_tid;
};

/*
 * Key and per-CPU value of gil_stats: every completed contended wait of a
 * target, counted before --gil-min-wait-ms filters it (interval_stats.h says
 * how user space reads them). User space makes the entry when it adds the
 * target; BPF only updates.
 */
struct pyebpf_gil_stats_key {
	__u32 pid; /* host tgid */
};

struct pyebpf_gil_stats {
	struct pyebpf_event_header hdr; /* of this CPU's first waiter: who the target is */
	__u64 reported; /* waits >= --gil-min-wait-ms sent as a gil_wait event (within --gil-max-events) */
	struct pyebpf_interval_stats waits;
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_proc) == 64, "gil proc layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_event) ==
			     sizeof(struct pyebpf_event_header) + 40 + 2 * sizeof(struct pyebpf_py_stack),
		     "gil event layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_thread_key) == 16, "gil thread key layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_thread) == 8, "gil thread layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_stats_key) == 4, "gil stats key layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gil_stats) == 64 + sizeof(struct pyebpf_interval_stats), "gil stats layout");

#endif /* PYEBPF_GIL_H */
