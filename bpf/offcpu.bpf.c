// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * offcpu: why target threads sleep (see offcpu.h for the model).
 *
 * Hooks: sched_switch, sched_wakeup, sched_wakeup_new, each built twice — as
 * tp_btf (BTF-typed, cheapest) and as raw_tp (the fallback where BTF tracing
 * programs cannot load). User space picks one family before load with
 * bpf_program__set_autoload; both call the same handlers below.
 *
 * Cost outside the targets: one py_procs lookup per task in each switch and
 * wake-up. Stacks are taken only when a target thread goes to sleep, in its
 * own context (sched_switch runs in prev's context: current == prev, so the
 * user stack, the TLS slot and the Python frames read are prev's).
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include "offcpu.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 targ_min_off_ns = 20 * 1000 * 1000ULL; /* --offcpu-min-total-ms */
const volatile __u64 targ_py_min_ns = 0;                     /* --offcpu-py-min-ms */
const volatile bool targ_py_enable = true;                   /* --offcpu-py-enable */
const volatile __u32 targ_max_depth = 20;                    /* --offcpu-max-stack-depth */
const volatile bool targ_aggregate = false;                  /* --offcpu-aggregate */

/* Aggregation generation, bumped by user space at each interval (mmaped .bss). */
volatile __u32 agg_gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

/*
 * Open off-CPU period per target thread. LRU so it can never fill up: only
 * when more than max_entries target threads sleep at once does the longest
 * sleeper lose its record (counted as NO_RECORD at its wake-up). Records of
 * exiting threads are deleted at their last switch-out.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_thread);
} threads SEC(".maps");

/* A zeroed record to create entries from (map memory: too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_thread);
} zero_thread SEC(".maps");

/* Aggregated mode only; user space shrinks them to one entry otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pyebpf_offcpu_agg_key);
	__type(value, struct pyebpf_offcpu_agg_value);
} agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct pyebpf_offcpu_stack_key);
	__type(value, struct pyebpf_offcpu_native_stack);
} agg_kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct pyebpf_offcpu_stack_key);
	__type(value, struct pyebpf_offcpu_native_stack);
} agg_ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pyebpf_offcpu_stack_key);
	__type(value, struct pyebpf_py_stack);
} agg_pystacks SEC(".maps");

static __always_inline struct pyebpf_offcpu_thread *thread_record(__u32 tid)
{
	struct pyebpf_offcpu_thread *rec = bpf_map_lookup_elem(&threads, &tid);
	__u32 zero = 0;

	if (rec)
		return rec;
	rec = bpf_map_lookup_elem(&zero_thread, &zero);
	if (!rec)
		return NULL;
	bpf_map_update_elem(&threads, &tid, rec, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
}

/* One native stack into `st`, leaf first: `frames` at most (see offcpu.h). */
static __always_inline int take_native_stack(void *ctx, struct pyebpf_offcpu_native_stack *st, __u32 frames,
					     __u64 flags)
{
	long bytes;

	if (frames > PYEBPF_OFFCPU_NATIVE_SLOTS)
		frames = PYEBPF_OFFCPU_NATIVE_SLOTS;
	bytes = bpf_get_stack(ctx, st->ips, frames * sizeof(__u64), flags);
	st->depth = bytes > 0 ? bytes / sizeof(__u64) : 0;
	return bytes > 0 ? 0 : -1;
}

static __always_inline void switch_out(void *ctx, const struct pyebpf_py_proc *proc, struct task_struct *prev,
				       bool preempt, __u32 prev_state, __u64 now)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	struct pyebpf_offcpu_thread *rec;

	if (prev_state & PYEBPF_TASK_DEAD) {
		bpf_map_delete_elem(&threads, &tid); /* its last switch: it never runs again */
		return;
	}
	rec = thread_record(tid);
	if (!rec)
		return;
	pyebpf_count(PYEBPF_CNT_HITS);
	rec->off_ts = now;
	if (preempt || prev_state == PYEBPF_TASK_RUNNING) {
		/* Still runnable (preempted, or yielded): run-queue time from now on, no sleep. */
		rec->runq_ts = now;
		rec->phase = PYEBPF_OFFCPU_PREEMPTED;
		pyebpf_count(PYEBPF_OFFCPU_CNT_PREEMPTIONS);
		return;
	}
	rec->phase = PYEBPF_OFFCPU_SLEEPING;
	rec->ev.prev_state = prev_state;
	pyebpf_count(PYEBPF_OFFCPU_CNT_SLEEPS);
	if (take_native_stack(ctx, &rec->ev.kstack, targ_max_depth + 1 + PYEBPF_OFFCPU_KSTACK_SLACK, 0))
		pyebpf_count(PYEBPF_OFFCPU_CNT_KSTACK_FAIL);
	if (take_native_stack(ctx, &rec->ev.ustack, targ_max_depth + 1, BPF_F_USER_STACK))
		pyebpf_count(PYEBPF_OFFCPU_CNT_USTACK_FAIL);
	if (targ_py_enable) {
		pyebpf_walk_stack(proc, pyebpf_find_tstate(proc, prev, tid), &rec->ev.py);
		if (rec->ev.py.status == PYEBPF_STACK_NO_TSTATE)
			pyebpf_count(PYEBPF_CNT_NO_TSTATE);
	} else {
		rec->ev.py.depth = 0;
		rec->ev.py.truncated = 0;
		rec->ev.py.status = PYEBPF_STACK_NOT_WALKED;
	}
}

static __always_inline __u64 hash_mix(__u64 hash, __u64 value)
{
	hash ^= value;
	hash *= 0x9e3779b97f4a7c15ULL;
	return hash ^ (hash >> 29);
}

static __always_inline __u64 native_stack_hash(const struct pyebpf_offcpu_native_stack *st)
{
	__u64 hash = 0xcbf29ce484222325ULL;
	__u32 depth = st->depth;

	if (!depth)
		return 0;
	for (__u32 i = 0; i < PYEBPF_OFFCPU_NATIVE_SLOTS && i < depth; i++)
		hash = hash_mix(hash, st->ips[i]);
	hash = hash_mix(hash, depth);
	return hash ? hash : 1;
}

static __always_inline __u64 py_stack_hash(const struct pyebpf_py_stack *st)
{
	__u64 hash = 0x84222325cbf29ce4ULL;
	__u32 depth = st->depth;

	if (!depth)
		return 0;
	for (__u32 i = 0; i < PYEBPF_MAX_FRAMES && i < depth; i++) {
		const struct pyebpf_py_frame *f = &st->frames[i];

		hash = hash_mix(hash, f->code);
		hash = hash_mix(hash, ((__u64)(__u32)f->instr << 32) | f->tag);
	}
	hash = hash_mix(hash, depth | ((__u64)st->truncated << 32));
	return hash ? hash : 1;
}

static __always_inline int store_stack(void *map, __u32 gen, __u64 hash, const void *stack)
{
	struct pyebpf_offcpu_stack_key key = { .gen = gen, .hash = hash };
	long err;

	if (!hash)
		return 0;
	err = bpf_map_update_elem(map, &key, stack, BPF_NOEXIST);
	return err && err != -17 /* EEXIST: already stored this interval */ ? -1 : 0;
}

/* Adds one off-CPU (or run-queue) period to the current interval's entry. */
static __always_inline void aggregate(struct pyebpf_offcpu_thread *rec, struct task_struct *task, __u32 state,
				      __u64 off_ns, __u64 runq_ns, bool with_stacks)
{
	struct pyebpf_offcpu_agg_key key = {};
	struct pyebpf_offcpu_agg_value *val;
	__u32 gen = agg_gen;

	key.gen = gen;
	key.pid = BPF_CORE_READ(task, tgid);
	key.tid = BPF_CORE_READ(task, pid);
	key.prev_state = state;
	if (with_stacks) {
		key.kstack = native_stack_hash(&rec->ev.kstack);
		key.ustack = native_stack_hash(&rec->ev.ustack);
		key.pystack = py_stack_hash(&rec->ev.py);
		/* Stacks first: an entry user space sees always finds its stacks. */
		if (store_stack(&agg_kstacks, gen, key.kstack, &rec->ev.kstack) ||
		    store_stack(&agg_ustacks, gen, key.ustack, &rec->ev.ustack) ||
		    store_stack(&agg_pystacks, gen, key.pystack, &rec->ev.py)) {
			pyebpf_count(PYEBPF_OFFCPU_CNT_AGG_FULL);
			return;
		}
	}
	val = bpf_map_lookup_elem(&agg, &key);
	if (!val) {
		struct pyebpf_offcpu_agg_value init = {};

		pyebpf_fill_header(&init.hdr, task, rec->off_ts);
		bpf_map_update_elem(&agg, &key, &init, BPF_NOEXIST);
		val = bpf_map_lookup_elem(&agg, &key);
		if (!val) {
			pyebpf_count(PYEBPF_OFFCPU_CNT_AGG_FULL);
			return;
		}
	}
	/* One thread's periods are serialised (it is switched in on one CPU at a
	 * time), but user space reads concurrently: keep the adds atomic. */
	__sync_fetch_and_add(&val->off_ns, off_ns);
	__sync_fetch_and_add(&val->runq_ns, runq_ns);
	__sync_fetch_and_add(&val->count, 1);
	if (off_ns > val->max_off_ns)
		val->max_off_ns = off_ns;
	pyebpf_count(PYEBPF_OFFCPU_CNT_AGGREGATED);
}

/* A sleep ended: filter, then send it (per-event) or add it (aggregated). */
static __always_inline void report_sleep(struct pyebpf_offcpu_thread *rec, struct task_struct *task, __u64 off_ns,
					 __u64 runq_ns)
{
	__u64 size;
	__u32 depth;

	pyebpf_count_add(PYEBPF_OFFCPU_CNT_OFF_NS, off_ns);
	if (off_ns < targ_min_off_ns) {
		pyebpf_count(PYEBPF_CNT_FILTERED);
		return;
	}
	if (off_ns < targ_py_min_ns) {
		rec->ev.py.depth = 0;
		rec->ev.py.status = PYEBPF_STACK_NOT_WALKED;
	}
	if (targ_aggregate) {
		aggregate(rec, task, rec->ev.prev_state, off_ns, runq_ns, true);
		return;
	}
	pyebpf_fill_header(&rec->ev.hdr, task, rec->off_ts);
	rec->ev.off_ns = off_ns;
	rec->ev.runq_ns = runq_ns;
	depth = rec->ev.py.depth;
	if (depth > PYEBPF_MAX_FRAMES)
		depth = PYEBPF_MAX_FRAMES;
	size = PYEBPF_OFFCPU_EVENT_BYTES(depth);
	if (size > sizeof(rec->ev))
		size = sizeof(rec->ev);
	if (bpf_ringbuf_output(&events, &rec->ev, size, 0)) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return;
	}
	pyebpf_count(PYEBPF_CNT_EVENTS);
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct pyebpf_offcpu_thread *rec = bpf_map_lookup_elem(&threads, &tid);
	__u64 runq_ns;

	if (!rec)
		return; /* first sight of this thread: it went to sleep before we attached */
	switch (rec->phase) {
	case PYEBPF_OFFCPU_WOKEN:
		report_sleep(rec, next, rec->runq_ts - rec->off_ts, now - rec->runq_ts);
		break;
	case PYEBPF_OFFCPU_SLEEPING:
		/* No wake-up between switch-out and now: the sleep was cancelled
		 * (signal pending at schedule()) and the thread stayed runnable. */
		pyebpf_count(PYEBPF_OFFCPU_CNT_NO_WAKEUP);
		/* fallthrough */
	case PYEBPF_OFFCPU_PREEMPTED:
	case PYEBPF_OFFCPU_NEW:
		runq_ns = now - rec->runq_ts;
		if (rec->phase == PYEBPF_OFFCPU_SLEEPING)
			runq_ns = now - rec->off_ts;
		pyebpf_count_add(PYEBPF_OFFCPU_CNT_PREEMPT_RUNQ_NS, runq_ns);
		if (targ_aggregate)
			aggregate(rec, next, PYEBPF_TASK_RUNNING, 0, runq_ns, false);
		break;
	default:
		break;
	}
	rec->phase = PYEBPF_OFFCPU_RUNNING;
}

static __always_inline int handle_switch(void *ctx, bool preempt, struct task_struct *prev,
					 struct task_struct *next, __u32 prev_state)
{
	struct pyebpf_py_proc *proc;
	__u64 now = bpf_ktime_get_ns();

	proc = pyebpf_lookup_proc(BPF_CORE_READ(prev, tgid));
	if (proc)
		switch_out(ctx, proc, prev, preempt, prev_state, now);
	if (pyebpf_lookup_proc(BPF_CORE_READ(next, tgid)))
		switch_in(next, now);
	return 0;
}

static __always_inline int handle_wakeup(struct task_struct *task, bool new_task)
{
	struct pyebpf_offcpu_thread *rec;
	__u32 tid;

	if (!pyebpf_lookup_proc(BPF_CORE_READ(task, tgid)))
		return 0;
	tid = BPF_CORE_READ(task, pid);
	if (new_task) {
		rec = thread_record(tid);
		if (rec) {
			rec->phase = PYEBPF_OFFCPU_NEW;
			rec->runq_ts = bpf_ktime_get_ns();
		}
		return 0;
	}
	rec = bpf_map_lookup_elem(&threads, &tid);
	if (!rec) {
		pyebpf_count(PYEBPF_OFFCPU_CNT_NO_RECORD);
		return 0;
	}
	/* Only the first wake-up of a sleep starts its run-queue wait: repeated
	 * wake-ups of a runnable thread must not restart it. */
	if (rec->phase == PYEBPF_OFFCPU_SLEEPING) {
		rec->runq_ts = bpf_ktime_get_ns();
		rec->phase = PYEBPF_OFFCPU_WOKEN;
	}
	return 0;
}

/* The prev_state argument exists since Linux 5.18 (commit fa2c3254d7cf). */
SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return handle_switch(ctx, preempt, prev, next, prev_state);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup_btf, struct task_struct *p)
{
	return handle_wakeup(p, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new_btf, struct task_struct *p)
{
	return handle_wakeup(p, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return handle_switch(ctx, preempt, prev, next, prev_state);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(offcpu_wakeup_raw, struct task_struct *p)
{
	return handle_wakeup(p, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new_raw, struct task_struct *p)
{
	return handle_wakeup(p, true);
}
