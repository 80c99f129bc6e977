/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gc tracker. By default nothing runs in the target per collection: user
 * space reads the interpreter's own per-generation counters (below), and a
 * CPU-clock sampler (gc_sample) counts how often a target's thread is found
 * running a collection (struct pyebpf_gc_samples). While the probe pair is on
 * (--gc-pauses: a target that collects rarely, or always), every collection
 * is also counted and timed per generation in BPF (gc_stats); one event, with
 * the Python stack, goes out for a collection at or above --gc-min-ms.
 *
 * Whatever the hook (uprobe/uretprobe pair on gc_collect_main or collect, or
 * the USDT probes python:gc__start/gc__done), the numbers come from the same
 * place: CPython's per-generation totals (_gc_runtime_state.generation_stats,
 * what gc.get_stats() returns), read when the collection starts and when it
 * ends. Exactly one generation's `collections` goes up by one per collection
 * (3.8 through 3.15), and its `collected`/`uncollectable` go up by what that
 * collection found: the same numbers gc.callbacks see in `info`. This needs no
 * knowledge of argument registers, so compiler clones of the collector
 * (3.8's collect.constprop.N, which drop different parameters) are handled
 * like the plain function, and a call that collects nothing (3.13's
 * gc_collect_main returning at once because a collection is already running)
 * is recognised and dropped.
 */
#ifndef PYEBPF_GC_H
#define PYEBPF_GC_H

#include "interval_stats.h"
#include "python.h"

#define PYEBPF_GC_GENERATIONS 3

/* One generation's running totals, as gc.get_stats() reports them. */
struct pyebpf_gc_gen_stats {
	__s64 collections;
	__s64 collected;
	__s64 uncollectable;
};

/*
 * Reads are the cost of a collection's two hooks (~100 ns each on a VM), so
 * each reads whole spans: <= 3.14 every generation's entry at once
 * (`totals_bytes` from the totals' start), 3.15+ one entry per ring after its
 * index byte. User space checks that a span fits this window.
 */
#define PYEBPF_GC_TOTALS_WINDOW 128

/*
 * Where one generation's totals are, from the start of the totals. <= 3.14:
 * a struct gc_generation_stats per generation in an array in the GC state.
 * 3.15+: the GC state points at struct gc_stats, one ring of entries per
 * generation (young, old[0], old[1]); each entry holds the running totals
 * after one collection and the ring's `index` byte names the newest.
 */
struct pyebpf_gc_gen {
	__u16 base;   /* the generation's entry (no rings) or its ring's first entry */
	__u16 index;  /* rings: the index byte, from base; PYEBPF_NO_OFFSET without rings */
	__u16 length; /* rings: entries in the ring */
	__u16 pad;
};

/* Per target process: where its GC state lives. Key of gc_procs: host tgid. */
struct pyebpf_gc_proc {
	__u64 gcstate;	     /* &_gc_runtime_state of the main interpreter (3.8: of the runtime) */
	__u16 tstate_interp; /* PyThreadState.interp; PYEBPF_NO_OFFSET where the GC state is per runtime (3.8) */
	__u16 interp_gc;     /* PyInterpreterState.gc; PYEBPF_NO_OFFSET on 3.8 */
	__u16 stats;	     /* _gc_runtime_state.generation_stats: the totals, or (3.15+) a pointer to them */
	__u8 stats_pointer;  /* 3.15+: follow the pointer at `stats` to the rings */
	__u8 totals_bytes;   /* <= 3.14: the span holding every generation's entry; 0 with rings */
	__u16 entry_size;    /* sizeof(struct gc_generation_stats) */
	__u16 collections;   /* its fields */
	__u16 collected;
	__u16 uncollectable;
	struct pyebpf_gc_gen gen[PYEBPF_GC_GENERATIONS];
	/* For the sampler (gc_sample): is a collection running, and is the
	 * sampled thread the one running it (the GIL's holder)? */
	__u64 gil;	  /* &struct _gil_runtime_state of the main interpreter; 0: unknown */
	__u16 collecting; /* _gc_runtime_state.collecting: nonzero while a collection runs */
	__u16 gil_locked; /* _gil_runtime_state.locked */
	__u16 gil_holder; /* _gil_runtime_state.last_holder: a PyThreadState* */
	__u16 pad;
};

/* Which hook produced an event. */
enum pyebpf_gc_hook {
	PYEBPF_GC_HOOK_UPROBE = 1, /* uprobe + uretprobe on the collector function */
	PYEBPF_GC_HOOK_USDT = 2,   /* python:gc__start + python:gc__done */
};

/*
 * BPF cookie of a uprobe attach point: set when the hooked symbol is the
 * unmodified collector whose first argument is the collecting thread's
 * PyThreadState* (gc_collect_main 3.10+, collect 3.9). Compiler clones drop
 * parameters, so for them the thread state comes from the thread's TSD slot.
 */
#define PYEBPF_GC_COOKIE_ARG0_TSTATE 1

enum pyebpf_gc_flags {
	PYEBPF_GC_F_NO_STATS = 1, /* counts unknown (stats unreadable, or not the collecting interpreter's) */
	PYEBPF_GC_F_NESTED = 2,	  /* more than one collection completed inside this one (docs/trackers/gc.md) */
};

struct pyebpf_gc_event {
	struct pyebpf_event_header hdr; /* ts_ns: when the collection started */
	__u64 end_ns;
	__s64 collected;	      /* objects freed: gc.callbacks' info["collected"] */
	__s64 uncollectable;	      /* info["uncollectable"] */
	__s32 generation;	      /* 0..2; -1 if unknown */
	__u16 hook;		      /* enum pyebpf_gc_hook */
	__u16 flags;		      /* enum pyebpf_gc_flags */
	struct pyebpf_py_stack stack; /* last: only PYEBPF_STACK_BYTES(depth) of it are sent */
};

/* Bytes before the stack, and what an event with `depth` frames occupies. */
#define PYEBPF_GC_EVENT_FIXED	     (sizeof(struct pyebpf_event_header) + 32)
#define PYEBPF_GC_EVENT_BYTES(depth) (PYEBPF_GC_EVENT_FIXED + PYEBPF_STACK_BYTES(depth))

/*
 * Key of the per-CPU gc_stats map: one entry per target and generation, made
 * by user space when it adds the target (BPF only updates). Generation
 * PYEBPF_GC_GEN_UNKNOWN holds collections whose generation is unknown (no
 * stats and no gc__start argument).
 */
#define PYEBPF_GC_GEN_UNKNOWN PYEBPF_GC_GENERATIONS
struct pyebpf_gc_stats_key {
	__u32 pid; /* host tgid */
	__u32 generation;
};

/* Value of gc_stats, per CPU: running totals since the target was added
 * (interval_stats.h says how user space reads them). */
struct pyebpf_gc_stats {
	struct pyebpf_event_header hdr; /* of this CPU's first collection: who the target is */
	__u64 count;			/* collections */
	__s64 collected;		/* of the collections whose counts are known */
	__s64 uncollectable;
	struct pyebpf_interval_stats pauses; /* the timed ones (docs/trackers/gc.md: nested) */
};

/*
 * Value of the per-CPU gc_samples map (key: host tgid, made by user space per
 * target): CPU-clock samples that found one of the target's threads on a CPU,
 * and those that found it running a collection. Their ratio is GC's share of
 * the target's CPU, with no hook in the target (the default gc mode).
 */
struct pyebpf_gc_samples {
	struct pyebpf_event_header hdr; /* of this CPU's first sample: who the target is */
	__u64 samples;
	__u64 collecting;
};

/* Tracker counters (slots after the common ones, see common.h). */
enum pyebpf_gc_counter {
	PYEBPF_GC_CNT_NOOP = PYEBPF_CNT_TRACKER_BASE, /* collector calls that collected nothing */
	PYEBPF_GC_CNT_NESTED,			      /* collector entries inside a collection of the same thread */
	PYEBPF_GC_CNT_UNMATCHED,		      /* ends without a start (pyebpf attached mid-collection) */
	PYEBPF_GC_CNT_NO_STATS,	  /* counts unknown: stats unreadable, or unchanged around a USDT pair */
	PYEBPF_GC_CNT_START_LOST, /* start record could not be stored */
	PYEBPF_GC_CNT_NO_TOTALS,  /* a collection not counted: no gc_stats entry for its target */
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_gen_stats) == 24, "gc totals layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_gen) == 8, "gc generation layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_proc) == 40 + 8 * PYEBPF_GC_GENERATIONS, "gc proc layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_samples) == 56 + 16, "gc samples layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_stats_key) == 8, "gc stats key layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_stats) == 56 + 3 * 8 + sizeof(struct pyebpf_interval_stats),
		     "gc stats layout");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_gc_event) == PYEBPF_GC_EVENT_FIXED + sizeof(struct pyebpf_py_stack),
		     "gc event layout");

#endif /* PYEBPF_GC_H */
