// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * offcpu: why target threads sleep (see offcpu.h for the model).
 *
 * Hooks, each built twice — as tp_btf (BTF-typed, cheapest) and as raw_tp (the
 * fallback where BTF tracing programs cannot load); user space picks one
 * family before load with bpf_program__set_autoload:
 *   sched_switch       switch-out: start of a sleep or of a preemption;
 *                      switch-in: end of the run-queue wait, the sleep's length
 *                      is now known and is filtered here
 *   sched_waking       end of the sleep, start of the run-queue wait: in the
 *                      waker's context, when it wakes the thread (sched_wakeup
 *                      can fire milliseconds later, on the sleeper's CPU once
 *                      it takes the wake-up IPI: that delay is run-queue time)
 *   sched_wakeup_new   a new thread's start of its first run-queue wait
 *                      (neither of the two where targ_runq_from_kernel: below)
 *   sched_exit_tp      end of __schedule, in the context of the task that now
 *                      runs: where a reported sleep's stacks are taken (below)
 *
 * Stacks (kernel, user, Python) must be read in the sleeper's own context.
 * Taking them at every switch-out costs microseconds per sleep even though
 * nearly all sleeps are too short to report. So, where the kernel has the
 * sched_exit_tp tracepoint (Linux >= 6.16), they are taken when a sleep that
 * passed the threshold resumes: the thread is back on its CPU but still inside
 * schedule(), so its kernel stack, user registers and Python frames are still
 * those it went to sleep with. Elsewhere they are taken at switch-out and kept
 * per thread (PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT).
 *
 * Cost outside the targets: one py_procs filter slot read per task in each
 * hook (python.h), no hash lookup unless a target shares the slot.
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include "offcpu.h"
#include "ringbuf.bpf.h"
#include "thread_record.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 targ_min_off_ns = 20 * 1000 * 1000ULL; /* --offcpu-min-total-ms */
const volatile __u64 targ_py_min_ns = 0;		    /* --offcpu-py-min-ms */
const volatile bool targ_py_enable = true;		    /* --offcpu-py-enable */
const volatile __u32 targ_max_depth = 20;		    /* --offcpu-max-stack-depth */
const volatile bool targ_aggregate = false;		    /* --offcpu-aggregate */
const volatile __u32 targ_capture = PYEBPF_OFFCPU_CAPTURE_AT_RESUME;
/*
 * Run-queue time from the kernel's own accounting of each thread (struct
 * sched_info, CONFIG_SCHED_INFO: the run_delay of /proc/PID/schedstat), read
 * at switch-out and switch-in, instead of a hook on every wake-up. The
 * wake-up hook ran in the waker's context and wrote to the wakee's record, a
 * cache line of another CPU: in a GIL convoy, where every hand-off is a
 * futex wake-up (~220,000 a second in bench/workloads/gil_convoy.py), it cost
 * the target ~3.5 % of its throughput by itself. tp_btf hooks only.
 */
const volatile bool targ_runq_from_kernel = false;

/* Aggregation generation, bumped by user space at each interval (mmaped .bss). */
volatile __u32 agg_gen = 0;

/* Four wake-ups' worth (PYEBPF_OFFCPU_WAKEUP_BYTES): about 1,700 sleeps with
 * packed stacks of typical depths (~600 bytes each) while the reader is kept
 * off the CPU. Every page of a ring is resident from the start and mapped
 * twice: 2 MB of pyebpf's RSS (user space sizes it before load). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} events SEC(".maps");

/*
 * Open off-CPU period per target thread, for the raw_tp hooks (their task
 * pointers are untyped, so no task storage): LRU so it can never fill up:
 * only when more than max_entries target threads are off CPU at once does the
 * longest sleeper lose its record (counted as NO_RECORD at its wake-up).
 * Records of exiting threads are deleted at their last switch-out. User space
 * shrinks it to one entry where the tp_btf hooks run.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_thread);
} threads SEC(".maps");

/* Stacks taken at switch-out, per thread (CAPTURE_AT_SWITCH_OUT only; user
 * space shrinks it to one entry otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_event);
} stashed SEC(".maps");

/* Per-CPU event under construction (map memory: too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_event);
} scratch SEC(".maps");

/* Per-CPU event as sent: packed (offcpu.h, "On the wire"). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_offcpu_event);
} wire SEC(".maps");

/*
 * Per CPU: the thread whose stacks the next sched_exit_tp on this CPU must
 * take (0: none). The switch-in that schedules a capture and the resume that
 * takes it run on the same CPU back to back, so the resume hook, which runs
 * after every context switch of the host, needs one per-CPU load to know it
 * has nothing to do.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} pending_capture SEC(".maps");

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

/*
 * The tp_btf hooks keep the same record as the offcpu part of the thread's
 * record in thread_records (task storage, thread_record.bpf.h): freed with
 * its thread, never full, and shared with the gil tracker's part. In a
 * 500-thread GIL convoy with every tracker on (~220,000 switches/s), moving
 * both trackers' records from tid-keyed LRU hashes to task storage cut the
 * scheduler hooks' BPF time from 19.8 to 18.1 % of a core (bpf_stats, 3
 * alternated runs) and the convoy kept x0.934 of its loops/s instead of
 * x0.905 (8 alternated rounds). offcpu alone once measured a hash lookup
 * cheaper (~60 vs ~110 ns): with nothing else using the thread's storage.
 */

/* The record of thread `task` (`tid`), made if `create`; NULL if it has none. */
static __always_inline struct pyebpf_offcpu_thread *thread_record(struct task_struct *task, __u32 tid, bool btf,
								  bool create)
{
	struct pyebpf_offcpu_thread *rec, fresh = {};

	if (btf)
		return pyebpf_thread_part(task, create, offcpu);
	rec = bpf_map_lookup_elem(&threads, &tid);
	if (rec || !create)
		return rec;
	bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
}

static __always_inline void forget_thread(struct task_struct *task, __u32 tid, bool btf)
{
	if (btf)
		bpf_task_storage_delete(&thread_records, task); /* the gil part too: not a target's any more */
	else
		bpf_map_delete_elem(&threads, &tid);
}

static __always_inline struct pyebpf_offcpu_event *scratch_event(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* One native stack into `st`, leaf first: `frames` at most (see offcpu.h). */
static __always_inline void take_native_stack(void *ctx, struct pyebpf_offcpu_native_stack *st, __u32 frames,
					      __u64 flags, __u32 fail_counter)
{
	long bytes;

	if (frames > PYEBPF_OFFCPU_NATIVE_SLOTS)
		frames = PYEBPF_OFFCPU_NATIVE_SLOTS;
	bytes = bpf_get_stack(ctx, st->ips, frames * sizeof(__u64), flags);
	st->depth = bytes > 0 ? bytes / sizeof(__u64) : 0;
	if (bytes <= 0)
		pyebpf_count(fail_counter);
}

/*
 * The three stacks of the current task (the sleeper, in its own context).
 * `py` says whether its Python stack is wanted at all.
 */
static __always_inline void take_stacks(void *ctx, struct pyebpf_offcpu_event *ev, const struct pyebpf_py_proc *proc,
					__u32 tid, bool py)
{
	take_native_stack(ctx, &ev->kstack, targ_max_depth + 1 + PYEBPF_OFFCPU_KSTACK_SLACK, 0,
			  PYEBPF_OFFCPU_CNT_KSTACK_FAIL);
	take_native_stack(ctx, &ev->ustack, targ_max_depth + 1, BPF_F_USER_STACK, PYEBPF_OFFCPU_CNT_USTACK_FAIL);
	if (targ_py_enable && py) {
		pyebpf_walk_stack(proc,
				  pyebpf_find_tstate(proc, pyebpf_thread_pointer(bpf_get_current_task_btf()), tid),
				  &ev->py);
		if (ev->py.status == PYEBPF_STACK_NO_TSTATE)
			pyebpf_count(PYEBPF_CNT_NO_TSTATE);
	} else {
		ev->py.depth = 0;
		ev->py.truncated = 0;
		ev->py.status = PYEBPF_STACK_NOT_WALKED;
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
	struct pyebpf_offcpu_stack_key key = {.gen = gen, .hash = hash};
	long err;

	if (!hash)
		return 0;
	err = bpf_map_update_elem(map, &key, stack, BPF_NOEXIST);
	return err && err != -17 /* EEXIST: already stored this interval */ ? -1 : 0;
}

/*
 * Adds one off-CPU (or run-queue) period of `task` to the current interval's
 * entry for its stacks (`ev`, NULL for run-queue time after a preemption).
 * `btf`: whether `task` is BTF-typed (task.bpf.h).
 */
static __always_inline void aggregate(const struct pyebpf_offcpu_thread *rec, struct task_struct *task, bool btf,
				      const struct pyebpf_offcpu_event *ev, __u32 state, __u64 off_ns, __u64 runq_ns)
{
	struct pyebpf_offcpu_agg_key key = {};
	struct pyebpf_offcpu_agg_value *val;
	__u32 gen = agg_gen;

	key.gen = gen;
	key.pid = PYEBPF_KREAD(btf, task, tgid);
	key.tid = PYEBPF_KREAD(btf, task, pid);
	key.prev_state = state;
	if (ev) {
		key.kstack = native_stack_hash(&ev->kstack);
		key.ustack = native_stack_hash(&ev->ustack);
		key.pystack = py_stack_hash(&ev->py);
		/* Stacks first: an entry user space sees always finds its stacks. */
		if (store_stack(&agg_kstacks, gen, key.kstack, &ev->kstack) ||
		    store_stack(&agg_ustacks, gen, key.ustack, &ev->ustack) ||
		    store_stack(&agg_pystacks, gen, key.pystack, &ev->py)) {
			pyebpf_count(PYEBPF_OFFCPU_CNT_AGG_FULL);
			return;
		}
	}
	val = bpf_map_lookup_elem(&agg, &key);
	if (!val) {
		struct pyebpf_offcpu_agg_value init = {};

		pyebpf_fill_task_header(&init.hdr, task, rec->off_ts, btf);
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

/* Copies native stack `st` into `out` at `pos`, cut to its depth; returns
 * the bytes written, 0 if it could not be copied. */
static __always_inline __u64 pack_native(__u8 *out, __u64 pos, const struct pyebpf_offcpu_native_stack *st)
{
	__u32 depth = st->depth;
	__u64 n;

	if (depth > PYEBPF_OFFCPU_NATIVE_SLOTS)
		depth = PYEBPF_OFFCPU_NATIVE_SLOTS;
	n = PYEBPF_OFFCPU_NATIVE_BYTES(depth);
	if (pos > sizeof(struct pyebpf_offcpu_event) - sizeof(*st) || bpf_probe_read_kernel(out + pos, n, st))
		return 0;
	return n;
}

/* `ev` packed into `out` (offcpu.h, "On the wire"); returns its size, 0 if it
 * could not be built. */
static __always_inline __u64 pack_event(__u8 *out, const struct pyebpf_offcpu_event *ev)
{
	__u64 pos = PYEBPF_OFFCPU_FIXED_BYTES, n;
	__u32 depth = ev->py.depth;

	if (bpf_probe_read_kernel(out, PYEBPF_OFFCPU_FIXED_BYTES, ev))
		return 0;
	n = pack_native(out, pos, &ev->kstack);
	if (!n)
		return 0;
	pos += n;
	n = pack_native(out, pos, &ev->ustack);
	if (!n)
		return 0;
	pos += n;
	if (depth > PYEBPF_MAX_FRAMES)
		depth = PYEBPF_MAX_FRAMES;
	n = PYEBPF_STACK_BYTES(depth);
	if (pos > sizeof(*ev) - sizeof(ev->py) || bpf_probe_read_kernel(out + pos, n, &ev->py))
		return 0;
	return pos + n;
}

/* A reported sleep with its stacks in `ev`: send it (per-event) or add it (aggregated). */
static __always_inline void report(const struct pyebpf_offcpu_thread *rec, struct task_struct *task, bool btf,
				   struct pyebpf_offcpu_event *ev)
{
	__u32 zero = 0;
	__u8 *out;
	__u64 size;

	if (targ_aggregate) {
		aggregate(rec, task, btf, ev, rec->prev_state, rec->off_ns, rec->runq_ns);
		return;
	}
	pyebpf_fill_task_header(&ev->hdr, task, rec->off_ts, btf);
	ev->off_ns = rec->off_ns;
	ev->runq_ns = rec->runq_ns;
	ev->prev_state = rec->prev_state;
	ev->pad = 0;
	out = bpf_map_lookup_elem(&wire, &zero);
	if (!out)
		return;
	size = pack_event(out, ev);
	if (!size || size > sizeof(*ev))
		return;
	if (bpf_ringbuf_output(&events, out, size, pyebpf_rb_wake_past(&events, PYEBPF_OFFCPU_WAKEUP_BYTES))) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return;
	}
	pyebpf_count(PYEBPF_CNT_EVENTS);
}

/*
 * A thread leaves the CPU, so it was switched in: if its record says
 * otherwise, the kernel skipped our programs for that switch-in (observed on a
 * VM whose agent threads suppress BPF tracepoint programs while they run).
 * Counted, so a missing report is never silent.
 */
static __always_inline void count_unseen_return(const struct pyebpf_offcpu_thread *rec)
{
	switch (rec->phase) {
	case PYEBPF_OFFCPU_SLEEPING:
	case PYEBPF_OFFCPU_WOKEN:
	case PYEBPF_OFFCPU_PREEMPTED:
	case PYEBPF_OFFCPU_NEW:
		pyebpf_count(PYEBPF_OFFCPU_CNT_END_UNSEEN);
		break;
	case PYEBPF_OFFCPU_CAPTURE:
		pyebpf_count(PYEBPF_OFFCPU_CNT_CAPTURE_MISSED);
		break;
	default:
		break;
	}
}

/* `proc`: the target's entry; only needed (and then never NULL) where stacks
 * are taken at switch-out. */
static __always_inline void switch_out(void *ctx, const struct pyebpf_py_proc *proc, struct task_struct *prev, bool btf,
				       __u32 tid, bool preempt, __u32 prev_state, __u64 now)
{
	struct pyebpf_offcpu_thread *rec;
	struct pyebpf_offcpu_event *ev;

	if (prev_state & PYEBPF_TASK_DEAD) {
		/* Its last switch: it never runs again. A thread that exits right
		 * after a sleep whose end was not seen loses that sleep here. */
		rec = thread_record(prev, tid, btf, false);
		if (rec)
			count_unseen_return(rec);
		/* Task storage goes with the task, after this switch's other
		 * hooks: gil's part of the record may still end a wait here. */
		if (!btf)
			forget_thread(prev, tid, btf);
		if (targ_capture == PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT)
			bpf_map_delete_elem(&stashed, &tid);
		return;
	}
	rec = thread_record(prev, tid, btf, true);
	if (!rec)
		return;
	pyebpf_count(PYEBPF_CNT_HITS);
	count_unseen_return(rec);
	rec->off_ts = now;
	if (btf && targ_runq_from_kernel)
		rec->run_delay = prev->sched_info.run_delay;
	if (preempt || prev_state == PYEBPF_TASK_RUNNING) {
		/* Still runnable (preempted, or yielded): run-queue time from now on, no sleep. */
		rec->runq_ts = now;
		rec->phase = PYEBPF_OFFCPU_PREEMPTED;
		pyebpf_count(PYEBPF_OFFCPU_CNT_PREEMPTIONS);
		return;
	}
	rec->phase = PYEBPF_OFFCPU_SLEEPING;
	rec->prev_state = prev_state;
	pyebpf_count(PYEBPF_OFFCPU_CNT_SLEEPS);
	if (targ_capture != PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT)
		return;
	ev = bpf_map_lookup_elem(&stashed, &tid);
	if (!ev) {
		ev = scratch_event();
		if (!ev)
			return;
		bpf_map_update_elem(&stashed, &tid, ev, BPF_ANY);
		ev = bpf_map_lookup_elem(&stashed, &tid);
		if (!ev)
			return;
	}
	/* The Python stack is wanted unless no sleep can reach --offcpu-py-min-ms. */
	if (proc)
		take_stacks(ctx, ev, proc, tid, true);
}

/* Where a sleep's length becomes known: filter, then report or schedule the capture. */
static __always_inline void end_sleep(struct pyebpf_offcpu_thread *rec, struct task_struct *task, bool btf, __u32 tid,
				      __u64 off_ns, __u64 runq_ns)
{
	struct pyebpf_offcpu_event *ev;

	pyebpf_count_add(PYEBPF_OFFCPU_CNT_OFF_NS, off_ns);
	rec->phase = PYEBPF_OFFCPU_RUNNING;
	if (off_ns < targ_min_off_ns) {
		pyebpf_count(PYEBPF_CNT_FILTERED);
		return;
	}
	pyebpf_count(PYEBPF_OFFCPU_CNT_REPORTED);
	rec->off_ns = off_ns;
	rec->runq_ns = runq_ns;
	if (targ_capture != PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT) {
		__u32 zero = 0, *pending;

		/* Stacks when it resumes: handle_resume(), right after this switch. */
		rec->phase = PYEBPF_OFFCPU_CAPTURE;
		pending = bpf_map_lookup_elem(&pending_capture, &zero);
		if (pending)
			*pending = tid;
		return;
	}
	ev = bpf_map_lookup_elem(&stashed, &tid);
	if (!ev) {
		pyebpf_count(PYEBPF_OFFCPU_CNT_NO_RECORD);
		return;
	}
	if (off_ns < targ_py_min_ns) {
		ev->py.depth = 0;
		ev->py.status = PYEBPF_STACK_NOT_WALKED;
	}
	report(rec, task, btf, ev);
}

static __always_inline void switch_in(struct pyebpf_offcpu_thread *rec, struct task_struct *next, bool btf, __u32 tid,
				      __u64 now)
{
	__u64 runq_ns;

	switch (rec->phase) {
	case PYEBPF_OFFCPU_WOKEN:
		end_sleep(rec, next, btf, tid, rec->runq_ts - rec->off_ts, now - rec->runq_ts);
		return;
	case PYEBPF_OFFCPU_SLEEPING:
		/* No wake-up between switch-out and now: the sleep was cancelled
		 * (signal pending at schedule()) and the thread stayed runnable,
		 * or it was woken while still switching out (handle_wakeup). */
		pyebpf_count(PYEBPF_OFFCPU_CNT_NO_WAKEUP);
		rec->runq_ts = rec->off_ts;
		/* fallthrough */
	case PYEBPF_OFFCPU_PREEMPTED:
	case PYEBPF_OFFCPU_NEW:
		runq_ns = now - rec->runq_ts;
		pyebpf_count_add(PYEBPF_OFFCPU_CNT_PREEMPT_RUNQ_NS, runq_ns);
		if (targ_aggregate)
			aggregate(rec, next, btf, NULL, PYEBPF_TASK_RUNNING, 0, runq_ns);
		break;
	default:
		/* Coming back without having been seen leaving (the mirror of
		 * END_UNSEEN in switch_out): counted, so a missing report is never silent. */
		pyebpf_count(PYEBPF_OFFCPU_CNT_START_UNSEEN);
		break;
	}
	rec->phase = PYEBPF_OFFCPU_RUNNING;
}

/*
 * targ_runq_from_kernel, at sched_switch: `next`'s run-queue time since it
 * left is what its sched_info.run_delay grew by meanwhile (an earlier part of
 * the wait, e.g. on another CPU before a migration) plus the wait that ends
 * now, which context_switch adds to run_delay after this tracepoint:
 * rq_clock - last_queued, as sched_info_arrive() computes it. The rest of the
 * time away was the sleep. Done here rather than when the thread resumes, so
 * the resume hook only checks a per-CPU slot: in a GIL convoy every switch-in
 * of a target thread ran a second lookup of its record there.
 */
static __always_inline void runq_from_kernel(struct pyebpf_offcpu_thread *rec, struct task_struct *next, __u64 now)
{
	__u64 away = now - rec->off_ts, runq = next->sched_info.run_delay - rec->run_delay, queued = 0;

	/* Plain loads of the BTF-typed task: a probe read per hop cost ~100 ns
	 * more per switch-in. */
	if (bpf_core_field_exists(next->sched_info.last_queued))
		queued = next->sched_info.last_queued;
	if (queued && bpf_core_field_exists(next->se.cfs_rq)) {
		/* This CPU's run queue, which `next` was just picked from, through
		 * its group scheduling entity (CONFIG_FAIR_GROUP_SCHED: user space
		 * checks; the per-CPU `runqueues` symbol needs KALLSYMS_ALL). */
		__u64 clock = next->se.cfs_rq->rq->clock;

		if (clock > queued)
			runq += clock - queued;
	}
	rec->runq_ts = now - (runq < away ? runq : away);
	if (rec->phase == PYEBPF_OFFCPU_SLEEPING)
		rec->phase = PYEBPF_OFFCPU_WOKEN;
}

/*
 * `btf`: the tp_btf hook's BTF-typed tasks are read with plain loads, the
 * raw_tp one's with probe reads (task.bpf.h). This runs at every context
 * switch of the host, so the cheap path matters.
 */
static __always_inline int handle_switch(void *ctx, bool preempt, struct task_struct *prev, struct task_struct *next,
					 __u32 prev_state, bool btf)
{
	__u32 prev_tgid = PYEBPF_KREAD(btf, prev, tgid), next_tgid = PYEBPF_KREAD(btf, next, tgid), tid;
	struct pyebpf_offcpu_thread *rec;
	struct pyebpf_py_proc *proc;
	__u64 now = 0; /* read only for a target: nearly every switch of the host is not one */
	bool known;

	if (pyebpf_maybe_proc(prev_tgid)) {
		tid = PYEBPF_KREAD(btf, prev, pid);
		/* A thread with a record is a target's: switch_out made it, and it
		 * is dropped below once its process stops being one. Where stacks
		 * are taken at the resume, such a thread's switch-out needs nothing
		 * from py_procs: one hash lookup less at each switch. */
		known = targ_capture != PYEBPF_OFFCPU_CAPTURE_AT_SWITCH_OUT && thread_record(prev, tid, btf, false);
		proc = known ? NULL : bpf_map_lookup_elem(&py_procs, &prev_tgid);
		if (known || proc) {
			now = bpf_ktime_get_ns();
			switch_out(ctx, proc, prev, btf, tid, preempt, prev_state, now);
		} else {
			/* No longer a target (exec'd, or dropped) but sharing a filter
			 * slot with one: its record must not outlive that. */
			forget_thread(prev, tid, btf);
		}
	}
	if (!pyebpf_maybe_proc(next_tgid))
		return 0;
	tid = PYEBPF_KREAD(btf, next, pid);
	rec = thread_record(next, tid, btf, false); /* a thread with a record is a target's (above) */
	if (!rec)
		return 0; /* first sight of this thread: it went to sleep before we attached */
	if (btf && targ_runq_from_kernel) {
		if (rec->phase == PYEBPF_OFFCPU_RUNNING)
			return 0; /* never seen leaving: no switch-in to account */
		if (!now)
			now = bpf_ktime_get_ns();
		runq_from_kernel(rec, next, now);
	} else if (!now) {
		now = bpf_ktime_get_ns();
	}
	switch_in(rec, next, btf, tid, now);
	return 0;
}

/* `p` is woken (or new); `btf` as for handle_switch. */
static __always_inline int handle_wakeup(struct task_struct *p, bool btf, bool new_task)
{
	struct pyebpf_offcpu_thread *rec;
	__u32 tgid = PYEBPF_KREAD(btf, p, tgid), tid;

	if (!pyebpf_maybe_proc(tgid))
		return 0;
	tid = PYEBPF_KREAD(btf, p, pid);
	if (new_task) {
		if (!bpf_map_lookup_elem(&py_procs, &tgid))
			return 0;
		rec = thread_record(p, tid, btf, true);
		if (rec) {
			rec->phase = PYEBPF_OFFCPU_NEW;
			rec->runq_ts = bpf_ktime_get_ns();
		}
		return 0;
	}
	rec = thread_record(p, tid, btf, false); /* a thread with a record is a target's */
	if (!rec) {
		pyebpf_count(PYEBPF_OFFCPU_CNT_NO_RECORD);
		return 0;
	}
	/* Only the first wake-up of a sleep starts its run-queue wait: repeated
	 * wake-ups of a runnable thread must not restart it. sched_waking runs in
	 * the waker's context, so it can also come while the sleeper is still
	 * inside __schedule on its CPU, before its switch-out ran (RUNNING here):
	 * a sleep of nanoseconds, left to switch_in as one without a wake-up. */
	if (rec->phase == PYEBPF_OFFCPU_SLEEPING) {
		rec->runq_ts = bpf_ktime_get_ns();
		rec->phase = PYEBPF_OFFCPU_WOKEN;
	}
	return 0;
}

/* Takes the stacks of a reported sleep of the current task, which has just
 * resumed (its kernel stack, user registers and Python frames are still those
 * it slept with), and reports it. */
static __always_inline void capture(void *ctx, struct pyebpf_offcpu_thread *rec, __u32 tgid, __u32 tid)
{
	struct pyebpf_offcpu_event *ev;
	struct pyebpf_py_proc *proc;

	rec->phase = PYEBPF_OFFCPU_RUNNING;
	proc = bpf_map_lookup_elem(&py_procs, &tgid);
	ev = scratch_event();
	if (!proc || !ev)
		return;
	take_stacks(ctx, ev, proc, tid, rec->off_ns >= targ_py_min_ns);
	report(rec, bpf_get_current_task_btf(), true, ev);
}

/* End of __schedule in the task that now runs: take a reported sleep's stacks.
 * `btf`: whether this is the tp_btf hook. */
static __always_inline int handle_resume(void *ctx, bool btf)
{
	__u32 zero = 0, *pending;
	struct pyebpf_offcpu_thread *rec;
	__u64 pid_tgid;
	__u32 tid;

	pending = bpf_map_lookup_elem(&pending_capture, &zero);
	if (!pending || !*pending)
		return 0; /* the common case: nothing to capture on this CPU */
	pid_tgid = bpf_get_current_pid_tgid();
	tid = (__u32)pid_tgid;
	if (*pending != tid)
		return 0; /* not yet: another task runs first (its switch was not seen) */
	*pending = 0;
	rec = thread_record(btf ? bpf_get_current_task_btf() : NULL, tid, btf, false);
	if (!rec || rec->phase != PYEBPF_OFFCPU_CAPTURE)
		return 0;
	capture(ctx, rec, pid_tgid >> 32, tid);
	return 0;
}

/* The prev_state argument exists since Linux 5.18 (commit fa2c3254d7cf). */
SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return handle_switch(ctx, preempt, prev, next, prev_state, true);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(offcpu_waking_btf, struct task_struct *p)
{
	return handle_wakeup(p, true, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new_btf, struct task_struct *p)
{
	return handle_wakeup(p, true, true);
}

/* A bare tracepoint (no tracefs event); its arguments are not used. */
SEC("tp_btf/sched_exit_tp")
int offcpu_resume_btf(__u64 *ctx)
{
	return handle_resume(ctx, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return handle_switch(ctx, preempt, prev, next, prev_state, false);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(offcpu_waking_raw, struct task_struct *p)
{
	return handle_wakeup(p, false, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new_raw, struct task_struct *p)
{
	return handle_wakeup(p, false, true);
}

SEC("raw_tp/sched_exit_tp")
int offcpu_resume_raw(__u64 *ctx)
{
	return handle_resume(ctx, false);
}
