// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gc: GC's share of each target's CPU from CPU-clock samples (gc_sample, at
 * the end), and, while user space has the probe pair on a target, every
 * collection counted and timed per generation in gc_stats, one event for each
 * at or above the threshold (gc.h says where the numbers come from). Two hook
 * pairs share the logic below; user space attaches one pair per target, chosen
 * by what its binary has:
 *
 *   gc_usdt_start / gc_usdt_done        python:gc__start / python:gc__done USDT
 *                                       (builds made --with-dtrace, stripped or not)
 *   gc_collect_entry / gc_collect_return  uprobe + uretprobe on gc_collect_main
 *                                       (3.10+) or collect (3.8, 3.9) and their
 *                                       clones, from .symtab
 *
 * At the start: the start time, the stack pointer (to tell the outermost call
 * from a nested one) and the generation stats go into `starts`, keyed by tid.
 * At the end: the stats again; a collection that ran bumps exactly one
 * generation. Every collection goes into gc_stats; collections shorter than
 * targ_min_ns stop there, so they cost no stack walk and no ring-buffer
 * traffic: the walk and the event are most of a collection's cost. The Python stack is walked at the end: the
 * collecting thread's frames are suspended in the call that triggered the
 * collection for its whole duration (code that runs inside it, finalizers and
 * callbacks, pushes and pops its own frames), so the stack at the end is the
 * stack at the start, and collections filtered by the threshold are never
 * walked.
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "gc.h"
#include "interval_stats.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 targ_min_ns = 0;	  /* --gc-min-ms */
const volatile bool targ_py_stack = true; /* --gc-py-enable */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pyebpf_gc_proc);
} gc_procs SEC(".maps");

/* Running totals per target and generation (gc.h); user space makes the
 * entries when it adds a target and deletes them once it has emitted a gone
 * target's last interval. Not preallocated: only live targets cost memory. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PYEBPF_MAX_PROCS *(PYEBPF_GC_GENERATIONS + 1));
	__type(key, struct pyebpf_gc_stats_key);
	__type(value, struct pyebpf_gc_stats);
} gc_stats SEC(".maps");

/* GC's share of each target's CPU, from CPU-clock samples (gc.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pyebpf_gc_samples);
} gc_samples SEC(".maps");

/* A collection in progress on one thread (ts_ns 0: none). */
struct gc_start {
	__u64 ts_ns;
	__u64 sp;	  /* stack pointer at the start */
	__u64 task_start; /* task->start_time: a record left by a dead thread whose tid was reused is stale */
	__u64 tstate;
	__u64 gcstate;
	__s32 arg_generation; /* gc__start's argument; -1 for the uprobe */
	__u32 stats_ok;
	struct pyebpf_gc_gen_stats stats[PYEBPF_GC_GENERATIONS];
};

/* One record per thread that collects, made at its first collection and
 * rewritten in place at each next one: an update or a delete of a hash entry
 * costs more than the rest of a hook, and a GC-heavy target collects
 * thousands of times a second. LRU, so threads that are gone make room; only
 * records of threads between the two hooks matter (with the GIL, one or two
 * per target). A record whose end never comes (a process dying
 * mid-collection) stays until its tid is reused (task_start tells it apart
 * then) or it is evicted; a failed insert is counted (START_LOST). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct gc_start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_gc_event);
} event_scratch SEC(".maps");

/* The GC state of the interpreter `tstate` belongs to (3.9+ keep one per
 * interpreter), else the one user space found for the main interpreter. */
static __always_inline __u64 gc_state(const struct pyebpf_gc_proc *gp, __u64 tstate)
{
	__u64 interp = 0;

	if (gp->interp_gc != PYEBPF_NO_OFFSET && tstate && !pyebpf_read_ptr(tstate + gp->tstate_interp, &interp) &&
	    interp)
		return interp + gp->interp_gc;
	return gp->gcstate;
}

/* Target memory copied for read_totals(): a span of up to
 * PYEBPF_GC_TOTALS_WINDOW bytes, and room past it so that any masked field
 * offset in the span can be copied from without a bounds check. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[2 * PYEBPF_GC_TOTALS_WINDOW]);
} totals_window SEC(".maps");

/* The entry at `at` in `window`: one generation's three running totals. */
static __always_inline void copy_totals(const struct pyebpf_gc_proc *gp, const __u8 *window, __u32 at,
					struct pyebpf_gc_gen_stats *out)
{
	const __u32 mask = PYEBPF_GC_TOTALS_WINDOW - 1;

	__builtin_memcpy(&out->collections, window + ((at + gp->collections) & mask), 8);
	__builtin_memcpy(&out->collected, window + ((at + gp->collected) & mask), 8);
	__builtin_memcpy(&out->uncollectable, window + ((at + gp->uncollectable) & mask), 8);
}

/* Every generation's totals in the GC state at `gcstate` (gc.h): one read
 * without rings, two per generation with them. */
static __always_inline int read_totals(const struct pyebpf_gc_proc *gp, __u64 gcstate, struct pyebpf_gc_gen_stats *out)
{
	__u64 totals = gcstate + gp->stats, entry;
	__u32 zero = 0, span = gp->totals_bytes;
	__u8 *window = bpf_map_lookup_elem(&totals_window, &zero);
	__u8 index;

	if (!window)
		return -1;
	if (gp->stats_pointer && (pyebpf_read_ptr(totals, &totals) || !totals))
		return -1;
	if (span) {
		if (span > PYEBPF_GC_TOTALS_WINDOW || bpf_probe_read_user(window, span, (const void *)totals))
			return -1;
		for (int g = 0; g < PYEBPF_GC_GENERATIONS; g++)
			copy_totals(gp, window, gp->gen[g].base, &out[g]);
		return 0;
	}
	span = gp->entry_size;
	if (span > PYEBPF_GC_TOTALS_WINDOW)
		return -1;
	for (int g = 0; g < PYEBPF_GC_GENERATIONS; g++) {
		entry = totals + gp->gen[g].base;
		if (bpf_probe_read_user(&index, sizeof(index), (const void *)(entry + gp->gen[g].index)) ||
		    index >= gp->gen[g].length)
			return -1;
		entry += (__u64)index * gp->entry_size;
		if (bpf_probe_read_user(window, span, (const void *)entry))
			return -1;
		copy_totals(gp, window, 0, &out[g]);
	}
	return 0;
}

/* Adds `count` collections of `generation` to gc_stats, and their duration
 * when `timed` (one pause may hold several collections: gc.h NESTED). */
static __always_inline void add_totals(struct task_struct *task, __u32 tgid, __s32 generation, __u64 count,
				       __s64 collected, __s64 uncollectable, bool timed, __u64 start_ns,
				       __u64 duration_ns)
{
	struct pyebpf_gc_stats_key key = {.pid = tgid, .generation = PYEBPF_GC_GEN_UNKNOWN};
	struct pyebpf_gc_stats *s;

	if (generation >= 0 && generation < PYEBPF_GC_GENERATIONS)
		key.generation = generation;
	s = bpf_map_lookup_elem(&gc_stats, &key);
	if (!s) {
		pyebpf_count(PYEBPF_GC_CNT_NO_TOTALS);
		return;
	}
	if (!s->hdr.pid)
		pyebpf_fill_header(&s->hdr, task, start_ns);
	s->count += count;
	s->collected += collected;
	s->uncollectable += uncollectable;
	if (timed)
		pyebpf_interval_add(&s->pauses, duration_ns);
}

static __always_inline void gc_begin(struct pt_regs *ctx, __u64 tstate, __s32 arg_generation, bool may_nest)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct task_struct *task = bpf_get_current_task_btf();
	struct pyebpf_gc_proc *gp;
	struct pyebpf_py_proc *proc;
	struct gc_start *rec;
	__u64 sp, task_start;

	gp = bpf_map_lookup_elem(&gc_procs, &tgid);
	if (!gp)
		return;
	pyebpf_count(PYEBPF_CNT_HITS);
	sp = PT_REGS_SP(ctx);
	task_start = task->start_time;
	rec = bpf_map_lookup_elem(&starts, &tid);
	if (may_nest && rec && rec->ts_ns && rec->task_start == task_start && rec->sp > sp) {
		/* Called from inside this thread's ongoing collection (3.13
		 * returns at once; docs/trackers/gc.md for 3.12): the outer call owns
		 * the record. */
		pyebpf_count(PYEBPF_GC_CNT_NESTED);
		return;
	}
	if (!rec) {
		struct gc_start fresh = {};

		bpf_map_update_elem(&starts, &tid, &fresh, BPF_NOEXIST);
		rec = bpf_map_lookup_elem(&starts, &tid);
		if (!rec) {
			pyebpf_count(PYEBPF_GC_CNT_START_LOST);
			return;
		}
	}
	/* The collector's own PyThreadState argument, once checked, names the
	 * interpreter collecting. Without it the main interpreter's GC state is
	 * read (the only one, but with sub-interpreters), and the thread state
	 * for the stack is looked up at the end, only for reported pauses. */
	if (tstate) {
		proc = pyebpf_lookup_proc(tgid);
		if (!(proc && pyebpf_tstate_is_thread(proc, tstate, pyebpf_thread_pointer(task))))
			tstate = 0;
	}
	rec->sp = sp;
	rec->task_start = task_start;
	rec->tstate = tstate;
	rec->gcstate = gc_state(gp, tstate);
	rec->arg_generation = arg_generation;
	rec->stats_ok = !read_totals(gp, rec->gcstate, rec->stats);
	if (!rec->stats_ok)
		pyebpf_count(PYEBPF_GC_CNT_NO_STATS);
	rec->ts_ns = bpf_ktime_get_ns(); /* last: the collection starts when this handler returns */
}

/*
 * What a collection changed, from the counters at its start and `after`:
 * into `ev` the oldest generation collected and the objects collected and
 * found uncollectable. Returns how many collections ran (more than one: a
 * nested one, flagged).
 */
static __always_inline __s64 collection_deltas(const struct gc_start *rec, const struct pyebpf_gc_gen_stats *after,
					       struct pyebpf_gc_event *ev)
{
	__s64 collections = 0, delta;

	ev->collected = 0;
	ev->uncollectable = 0;
	for (int g = 0; g < PYEBPF_GC_GENERATIONS; g++) {
		delta = after[g].collections - rec->stats[g].collections;
		if (delta <= 0)
			continue;
		collections += delta;
		ev->generation = g; /* the oldest one collected, if several were */
		ev->collected += after[g].collected - rec->stats[g].collected;
		ev->uncollectable += after[g].uncollectable - rec->stats[g].uncollectable;
	}
	if (collections > 1)
		ev->flags |= PYEBPF_GC_F_NESTED;
	return collections;
}

/* Every collection into gc_stats; the pause is timed for ev->generation's. */
static __always_inline void count_collections(struct task_struct *task, __u32 tgid, const struct gc_start *rec,
					      const struct pyebpf_gc_gen_stats *after, __s64 collections,
					      const struct pyebpf_gc_event *ev, __u64 now)
{
	__s64 delta;

	if (!collections) {
		add_totals(task, tgid, ev->generation, 1, 0, 0, true, rec->ts_ns, now - rec->ts_ns);
		return;
	}
	for (int g = 0; g < PYEBPF_GC_GENERATIONS; g++) {
		delta = after[g].collections - rec->stats[g].collections;
		if (delta > 0)
			add_totals(task, tgid, g, delta, after[g].collected - rec->stats[g].collected,
				   after[g].uncollectable - rec->stats[g].uncollectable, g == ev->generation,
				   rec->ts_ns, now - rec->ts_ns);
	}
}

/* A pause at or above --gc-min-ms: its event, with the Python stack of the
 * code that triggered the collection. */
static __always_inline void send_pause(struct pyebpf_gc_event *ev, const struct gc_start *rec, struct task_struct *task,
				       __u32 tgid, __u32 tid, __u64 now, __u16 hook)
{
	struct pyebpf_py_proc *proc;
	__u64 size;

	pyebpf_fill_header(&ev->hdr, task, rec->ts_ns);
	ev->end_ns = now;
	ev->hook = hook;
	ev->stack.depth = 0;
	ev->stack.truncated = 0;
	ev->stack.status = PYEBPF_STACK_NOT_WALKED;
	ev->stack.tstate = rec->tstate;
	if (targ_py_stack) {
		proc = pyebpf_lookup_proc(tgid);
		if (proc) {
			pyebpf_walk_stack(proc,
					  rec->tstate ?: pyebpf_find_tstate(proc, pyebpf_thread_pointer(task), tid),
					  &ev->stack);
			if (ev->stack.status == PYEBPF_STACK_NO_TSTATE)
				pyebpf_count(PYEBPF_CNT_NO_TSTATE);
		}
	}
	size = PYEBPF_GC_EVENT_BYTES(ev->stack.depth);
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size, 0))
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
	else
		pyebpf_count(PYEBPF_CNT_EVENTS);
}

static __always_inline void gc_end(struct pt_regs *ctx, __u16 hook)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the collection ended when this handler was entered */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid, zero = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	struct pyebpf_gc_gen_stats after[PYEBPF_GC_GENERATIONS];
	struct pyebpf_gc_event *ev;
	struct pyebpf_gc_proc *gp;
	struct gc_start *rec;
	__s64 collections = 0;
	bool stats;

	gp = bpf_map_lookup_elem(&gc_procs, &tgid);
	if (!gp)
		return;
	rec = bpf_map_lookup_elem(&starts, &tid);
	if (!rec || !rec->ts_ns) {
		pyebpf_count(PYEBPF_GC_CNT_UNMATCHED);
		return;
	}
	/* A uretprobe fires with the stack pointer above the one at entry; a
	 * nested call returning is deeper in the stack than the outermost entry. */
	if (hook == PYEBPF_GC_HOOK_UPROBE && PT_REGS_SP(ctx) <= rec->sp)
		return;
	ev = bpf_map_lookup_elem(&event_scratch, &zero);
	if (!ev)
		goto done;

	ev->generation = rec->arg_generation;
	ev->collected = -1;
	ev->uncollectable = -1;
	ev->flags = 0;
	stats = rec->stats_ok && !read_totals(gp, rec->gcstate, after);
	if (rec->stats_ok && !stats)
		pyebpf_count(PYEBPF_GC_CNT_NO_STATS);
	if (stats)
		collections = collection_deltas(rec, after, ev);
	if (stats && !collections && hook == PYEBPF_GC_HOOK_UPROBE) {
		/* Nothing was collected: a call that returned at once (3.13, when a
		 * collection is already running), or the stats of another
		 * interpreter than the collecting one (docs/trackers/gc.md). */
		pyebpf_count(PYEBPF_GC_CNT_NOOP);
		goto done;
	}
	if (!collections) {
		/* Counts unknown. gc__start/gc__done only fire around a real
		 * collection: it is reported with gc__start's generation. */
		if (stats)
			pyebpf_count(PYEBPF_GC_CNT_NO_STATS);
		ev->flags |= PYEBPF_GC_F_NO_STATS;
	}
	count_collections(task, tgid, rec, after, collections, ev, now);
	if (now - rec->ts_ns < targ_min_ns)
		pyebpf_count(PYEBPF_CNT_FILTERED);
	else
		send_pause(ev, rec, task, tgid, tid, now, hook);
done:
	rec->ts_ns = 0;
}

SEC("uprobe")
int BPF_KPROBE(gc_collect_entry)
{
	__u64 tstate = 0;

	if (bpf_get_attach_cookie(ctx) & PYEBPF_GC_COOKIE_ARG0_TSTATE)
		tstate = PT_REGS_PARM1(ctx);
	gc_begin(ctx, tstate, -1, true);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(gc_collect_return)
{
	gc_end(ctx, PYEBPF_GC_HOOK_UPROBE);
	return 0;
}

/* PyDTrace_GC_START(int generation), after the "start" gc.callbacks. */
SEC("usdt")
int BPF_USDT(gc_usdt_start, int generation)
{
	gc_begin(ctx, 0, generation, false);
	return 0;
}

/* PyDTrace_GC_DONE(n + m), after the stats are updated: its argument (the
 * number gc.collect() returns) is not needed, the stats split it into
 * collected and uncollectable. */
SEC("usdt")
int BPF_USDT(gc_usdt_done)
{
	gc_end(ctx, PYEBPF_GC_HOOK_USDT);
	return 0;
}

/* True when `task`, a thread of the target `gp` describes, is running one of
 * its main interpreter's collections: `collecting` is set, and the thread
 * holds the GIL (with the GIL, the collecting thread keeps it throughout;
 * another thread of the process on a CPU meanwhile runs without it). Where
 * the GIL is unknown, `collecting` alone decides. */
static __always_inline bool runs_collection(const struct pyebpf_gc_proc *gp, __u32 tgid, struct task_struct *task)
{
	struct pyebpf_py_proc *proc;
	__s32 collecting = 0, locked = 0;
	__u64 holder = 0;

	if (bpf_probe_read_user(&collecting, sizeof(collecting), (const void *)(gp->gcstate + gp->collecting)) ||
	    !collecting)
		return false;
	if (!gp->gil)
		return true;
	if (bpf_probe_read_user(&locked, sizeof(locked), (const void *)(gp->gil + gp->gil_locked)) || !locked ||
	    pyebpf_read_ptr(gp->gil + gp->gil_holder, &holder))
		return false;
	proc = pyebpf_lookup_proc(tgid);
	return proc && pyebpf_tstate_is_thread(proc, holder, pyebpf_thread_pointer(task));
}

/* The default gc mode's only hook: a CPU-clock sample (--gc-sample-hz) that
 * finds a target's thread on a CPU counts it, and counts it as GC when that
 * thread runs a collection. Nothing runs in the target but the timer
 * interrupt every profiler takes. */
SEC("perf_event")
int gc_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_struct *task = bpf_get_current_task_btf();
	struct pyebpf_gc_samples *s;
	struct pyebpf_gc_proc *gp;

	s = bpf_map_lookup_elem(&gc_samples, &tgid);
	if (!s)
		return 0;
	gp = bpf_map_lookup_elem(&gc_procs, &tgid);
	if (!gp)
		return 0;
	if (!s->hdr.pid)
		pyebpf_fill_header(&s->hdr, task, bpf_ktime_get_ns());
	s->samples++;
	if (runs_collection(gp, tgid, task))
		s->collecting++;
	return 0;
}
