// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gil: how long target threads wait for the GIL, who held it, and what both
 * were running.
 *
 * A wait is measured by one of three hook pairs, chosen per process by user
 * space (enum pyebpf_gil_hook; sched where the kernel and the C library allow
 * it, else cond_wait, else take_gil, unless told otherwise):
 *
 *  - sched: no probe in the target, the scheduler's sched_switch and
 *    sched_exit_tp (the section "hook 3" below says how). A GIL hand-off of a
 *    contended target traps nowhere, where the uprobe pairs below trap twice
 *    per round of a waiter (a 500-thread convoy ran at x0.27-0.47).
 *
 *  - take_gil: uprobe/uretprobe on CPython's take_gil(). Every acquisition is
 *    seen (and pays two probe hits); the wait is the whole call. A call
 *    waited if its thread blocked inside (its count of voluntary context
 *    switches moved) or another thread took the GIL meanwhile. Whether the
 *    GIL was locked at entry does not decide it: the holder can release it
 *    in the microseconds before take_gil() checks, and two observers would
 *    disagree. The GIL state is read without its mutex at entry (a racing
 *    taker can make the holder unknown). Needs the static symbol (.symtab).
 *  - cond_wait: uprobe/uretprobe on libc's pthread_cond_timedwait(), filtered
 *    on cond == &gil->cond. take_gil() calls it in a loop while the GIL is
 *    locked and holds gil->mutex around every check, so at each entry and
 *    return the state read here is exact: at the first entry the GIL is locked
 *    by `last_holder`; at a return with `locked == 0` this thread takes the
 *    GIL next, ending the wait. Uncontended acquisitions never reach it, so
 *    they cost nothing. Misses the few microseconds take_gil spends before
 *    its first wait (locking gil->mutex).
 *
 * All feed end_wait(), which counts the wait in gil_stats, filters on
 * --gil-min-wait-ms, walks the
 * waiter's and the holder's Python stacks only for waits of at least
 * --gil-py-min-ms, and sends one event.
 *
 * The holder is a PyThreadState*; its thread pointer (tstate->thread_id) is
 * mapped to a host tid by thread_ids, which is kept exact by the kernel's
 * own events: an iterator over existing tasks at start, sched_process_fork
 * for new threads, sched_process_exit for threads that end.
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include "gil.h"
#include "interval_stats.bpf.h"
#include "ringbuf.bpf.h"
#include "thread_record.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 targ_min_wait_ns = 1000000;
const volatile __u64 targ_py_min_ns = 0;
const volatile bool targ_py_enable = true;
const volatile __u64 targ_wakeup_bytes = 256 * 1024; /* a quarter of the ring, set by user space */
const volatile __u32 targ_max_events = 1000;	     /* --gil-max-events: per target and second, 0 = no limit */

/* A record older than this when its thread next waits was left by a wait
 * whose end was missed (the thread was preempted between two rounds of the
 * cond_wait loop for far less than this). */
#define PYEBPF_GIL_STALE_NS (1000ULL * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pyebpf_gil_proc);
} gil_procs SEC(".maps");

/* Running totals per target (gil.h); user space makes the entries when it
 * adds a target and deletes them once it has emitted a gone target's last
 * interval. Not preallocated: only live targets cost memory. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, struct pyebpf_gil_stats_key);
	__type(value, struct pyebpf_gil_stats);
} gil_stats SEC(".maps");

/* Not preallocated: filling 65,536 entries' free lists took ~10 ms of
 * start-up, for threads that come and go in process context. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct pyebpf_gil_thread_key);
	__type(value, struct pyebpf_gil_thread);
} thread_ids SEC(".maps");

/* One entry per thread inside a GIL wait at this moment, so 16,384 is far
 * more than any process runs; the kernel preallocates every LRU entry at
 * start, and 65,536 took ~27 ms of it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pyebpf_gil_wait);
} waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_gil_event);
} event_scratch SEC(".maps");

struct gil_state {
	__u64 holder;
	__u64 switch_number;
	__u32 locked;
};

/* One read of the GIL's first bytes; user space checked the offsets fit. */
static __always_inline int read_gil_state(const struct pyebpf_gil_proc *gp, struct gil_state *st)
{
	__u8 raw[PYEBPF_GIL_STATE_BYTES + 8] = {};

	if (bpf_probe_read_user(raw, PYEBPF_GIL_STATE_BYTES, (const void *)gp->gil)) {
		pyebpf_count(PYEBPF_GIL_CNT_STATE_FAULT);
		return -1;
	}
	__builtin_memcpy(&st->holder, raw + (gp->last_holder & (PYEBPF_GIL_STATE_BYTES - 1)), 8);
	__builtin_memcpy(&st->switch_number, raw + (gp->switch_number & (PYEBPF_GIL_STATE_BYTES - 1)), 8);
	__builtin_memcpy(&st->locked, raw + (gp->locked & (PYEBPF_GIL_STATE_BYTES - 1)), 4);
	return 0;
}

static __always_inline void remember_thread(struct task_struct *task)
{
	struct pyebpf_gil_thread_key key = {};
	struct pyebpf_gil_thread val = {};

	key.tgid = task->tgid;
	key.thread_id = pyebpf_thread_pointer(task);
	if (!key.thread_id)
		return;
	val.tid = task->pid;
	val.ns_tid = pyebpf_ns_id(BPF_CORE_READ(task, thread_pid));
	bpf_map_update_elem(&thread_ids, &key, &val, BPF_ANY);
}

static __always_inline void lookup_holder_tid(__u32 tgid, struct pyebpf_gil_wait *w)
{
	struct pyebpf_gil_thread_key key = {};
	struct pyebpf_gil_thread *t;

	key.tgid = tgid;
	key.thread_id = w->holder_thread_id;
	t = bpf_map_lookup_elem(&thread_ids, &key);
	if (t) {
		w->holder_tid = t->tid;
		w->holder_ns_tid = t->ns_tid;
	}
}

/* A wait begins: record who holds the GIL now (if it is held). */
static __always_inline void begin_wait(const struct pyebpf_gil_proc *gp, const struct pyebpf_py_proc *proc, __u32 tgid,
				       const struct gil_state *st, struct pyebpf_gil_wait *w)
{
	w->switch_number = st->switch_number;
	if (!st->locked || !st->holder)
		return;
	w->holder_tstate = st->holder;
	if (pyebpf_read_ptr(st->holder + proc->layout.tstate_thread_id, &w->holder_thread_id))
		return;
	lookup_holder_tid(tgid, w);
}

/* Every completed wait, of any length, goes into its target's gil_stats;
 * `reported`: it is sent as an event. */
static __always_inline void count_wait(struct task_struct *task, __u32 tgid, __u64 start_ns, __u64 duration,
				       bool reported)
{
	struct pyebpf_gil_stats_key key = {.pid = tgid};
	struct pyebpf_gil_stats *s = bpf_map_lookup_elem(&gil_stats, &key);

	if (!s) {
		pyebpf_count(PYEBPF_GIL_CNT_NO_TOTALS);
		return;
	}
	if (!s->hdr.pid)
		pyebpf_fill_header(&s->hdr, task, start_ns);
	if (reported)
		s->reported++;
	pyebpf_interval_add(&s->waits, duration);
}

/*
 * --gil-max-events: whether one more gil_wait event of this target fits in
 * the current second, and in its current tenth, which may send a tenth of the
 * budget (rounded up). A GIL convoy makes tens of thousands of long waits a
 * second, and each event walks two stacks on its waiter's way to the GIL,
 * which every other thread of the target then waits for. Spread over the
 * second, the events sample all of it, and they do not come as one burst
 * that fills the ring buffer before pyebpf reads it: with the whole budget at
 * once, a convoy sent its 1,000 events in the first ~25 ms of each second and
 * the observer's convoy row lost up to 60 of them. Approximate where CPUs
 * race at a turn; every wait is in gil_stats either way.
 */
#define PYEBPF_GIL_TENTH_NS (100ULL * 1000 * 1000)

/* Whether the budget of the current second and tenth has room for one more
 * event; windows already over count nothing against it. */
static __always_inline bool event_budget_left(const struct pyebpf_gil_proc *gp, __u64 now)
{
	if (!targ_max_events)
		return true;
	if (gp->events_second == now / 1000000000ULL && gp->events_sent >= targ_max_events)
		return false;
	return gp->events_tenth != now / PYEBPF_GIL_TENTH_NS || gp->tenth_sent < (targ_max_events + 9) / 10;
}

static __always_inline bool event_allowed(struct pyebpf_gil_proc *gp, __u64 now)
{
	__u64 second = now / 1000000000ULL, tenth = now / PYEBPF_GIL_TENTH_NS;

	if (!targ_max_events)
		return true;
	if (gp->events_second != second) {
		gp->events_second = second;
		gp->events_sent = 0;
	}
	if (gp->events_tenth != tenth) {
		gp->events_tenth = tenth;
		gp->tenth_sent = 0;
	}
	if (!event_budget_left(gp, now)) {
		pyebpf_count(PYEBPF_GIL_CNT_RATE_LIMITED);
		return false;
	}
	__sync_fetch_and_add(&gp->events_sent, 1);
	__sync_fetch_and_add(&gp->tenth_sent, 1);
	return true;
}

/* The holder's fields of the event of wait `w`: who held the GIL when it
 * began, and how many times it changed hands until `end_sn`. */
static __always_inline void fill_holder(struct pyebpf_gil_event *ev, struct pyebpf_gil_wait *w,
					const struct pyebpf_py_proc *proc, __u32 tgid, __u8 hook, __u64 end_sn)
{
	if (w->holder_tstate && !w->holder_thread_id &&
	    pyebpf_read_ptr(w->holder_tstate + proc->layout.tstate_thread_id, &w->holder_thread_id))
		w->holder_tstate = 0; /* sched: named only now, and it is gone */
	if (!w->holder_tstate)
		pyebpf_count(PYEBPF_GIL_CNT_HOLDER_UNKNOWN);
	else if (!w->holder_tid)
		lookup_holder_tid(tgid, w); /* the holder's thread was created very recently */
	if (w->holder_tstate && !w->holder_tid)
		pyebpf_count(PYEBPF_GIL_CNT_HOLDER_NO_TID);
	ev->holder_tstate = w->holder_tstate;
	ev->holder_thread_id = w->holder_thread_id;
	ev->holder_tid = w->holder_tid;
	ev->holder_ns_tid = w->holder_ns_tid;
	ev->holder_changes = 0;
	if (end_sn > w->switch_number) {
		__u64 changes = end_sn - w->switch_number;

		/* take_gil returns after this thread's own take bumped the number. */
		if (hook == PYEBPF_GIL_HOOK_TAKE_GIL)
			changes--;
		ev->holder_changes = changes > 0xffffffff ? 0xffffffff : (__u32)changes;
	}
}

/* Both stacks of the event of wait `w`. The waiter's: walked now from
 * `waiter_tstate` if `waiter_here` (its frames are still those of the wait),
 * else `stashed` (walked earlier in the wait) if any, else none. */
static __always_inline void walk_wait_stacks(struct pyebpf_gil_event *ev, const struct pyebpf_py_proc *proc,
					     const struct pyebpf_gil_wait *w, bool waiter_here, __u64 waiter_tstate,
					     const struct pyebpf_py_stack *stashed)
{
	if (waiter_here) {
		pyebpf_walk_stack(proc, waiter_tstate, &ev->waiter_stack);
	} else if (!stashed || bpf_probe_read_kernel(&ev->waiter_stack, sizeof(ev->waiter_stack), stashed)) {
		pyebpf_walk_stack(proc, 0, &ev->waiter_stack);
		ev->waiter_stack.status = PYEBPF_STACK_NOT_WALKED;
	}
	/* Walked now, at the end of the wait: the holder released the GIL
	 * since, so its frames are those at its latest release. */
	if (w->holder_tstate && pyebpf_tstate_is_thread(proc, w->holder_tstate, w->holder_thread_id)) {
		pyebpf_walk_stack(proc, w->holder_tstate, &ev->holder_stack);
	} else {
		if (w->holder_tstate)
			pyebpf_count(PYEBPF_GIL_CNT_HOLDER_GONE);
		pyebpf_walk_stack(proc, 0, &ev->holder_stack);
	}
}

/* The event of a wait too short for --gil-py-min-ms: no stacks. */
static __always_inline void skip_wait_stacks(struct pyebpf_gil_event *ev, const struct pyebpf_py_proc *proc)
{
	if (targ_py_enable)
		pyebpf_count(PYEBPF_GIL_CNT_STACKS_SKIPPED);
	pyebpf_walk_stack(proc, 0, &ev->waiter_stack);
	pyebpf_walk_stack(proc, 0, &ev->holder_stack);
	ev->waiter_stack.status = PYEBPF_STACK_NOT_WALKED;
	ev->holder_stack.status = PYEBPF_STACK_NOT_WALKED;
}

/*
 * The wait described by `w` ended at `now` with this thread about to hold (or
 * holding) the GIL: count it, filter it, and send it with the stacks. The
 * waiter's: walked now if `waiter_here` (its frames are still those of the
 * wait), else `stashed` (walked earlier in the wait) if any, else none.
 * `end_sn`: the GIL's switch number at the end. Runs in the waiter's context.
 */
static __always_inline void end_wait(struct pyebpf_gil_proc *gp, __u32 tgid, __u32 tid, struct pyebpf_gil_wait *w,
				     __u64 now, __u8 hook, __u64 end_sn, bool waiter_here,
				     const struct pyebpf_py_stack *stashed)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 duration = now - w->start_ns, waiter_tstate = 0, interp = 0, gil = 0, size;
	struct pyebpf_gil_event *ev;
	struct pyebpf_py_proc *proc;
	bool stacks, send;
	__u32 zero = 0;

	/*
	 * take_gil sees every acquisition; it waited if the thread blocked in it
	 * (on the GIL's condition or mutex), or if another thread took the GIL
	 * meanwhile (the switch number moved by more than this thread's own
	 * take). cond_wait and sched only see waits.
	 */
	if (hook == PYEBPF_GIL_HOOK_TAKE_GIL && task->nvcsw == w->nvcsw && end_sn - w->switch_number < 2)
		return;
	send = duration >= targ_min_wait_ns && event_allowed(gp, now);
	count_wait(task, tgid, w->start_ns, duration, send);
	if (duration < targ_min_wait_ns)
		pyebpf_count(PYEBPF_CNT_FILTERED);
	if (!send)
		return;
	proc = pyebpf_lookup_proc(tgid);
	ev = bpf_map_lookup_elem(&event_scratch, &zero);
	if (!proc || !ev)
		return;

	stacks = targ_py_enable && duration >= targ_py_min_ns;
	/* 3.12+: a subinterpreter may have its own GIL; only the main one is
	 * tracked. The sched hook knows which GIL from the futex address. */
	const bool interp_check = gp->tstate_interp != PYEBPF_NO_OFFSET && hook != PYEBPF_GIL_HOOK_SCHED;

	if ((stacks && waiter_here) || interp_check)
		waiter_tstate = w->self ? w->self : pyebpf_find_tstate(proc, pyebpf_thread_pointer(task), tid);
	if (interp_check && waiter_tstate && !pyebpf_read_ptr(waiter_tstate + gp->tstate_interp, &interp) &&
	    !pyebpf_read_ptr(interp + gp->interp_ceval_gil, &gil) && gil != gp->gil) {
		pyebpf_count(PYEBPF_GIL_CNT_OTHER_INTERP);
		return;
	}

	pyebpf_fill_header(&ev->hdr, task, w->start_ns);
	ev->duration_ns = duration;
	ev->hook = hook;
	ev->pad[0] = ev->pad[1] = ev->pad[2] = 0;
	fill_holder(ev, w, proc, tgid, hook, end_sn);
	if (stacks)
		walk_wait_stacks(ev, proc, w, waiter_here, waiter_tstate, stashed);
	else
		skip_wait_stacks(ev, proc);

	size = PYEBPF_GIL_EVENT_BYTES(ev->holder_stack.depth);
	barrier_var(size); /* keep the bound check on the register the helper gets */
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size,
			       pyebpf_rb_wakeup_flags(&events, targ_wakeup_bytes, PYEBPF_GIL_WAKEUP_GAP_NS))) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return;
	}
	pyebpf_count(PYEBPF_CNT_EVENTS);
}

/* --- hook pair 1: take_gil() ------------------------------------------------ */

SEC("uprobe")
int take_gil_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct pyebpf_gil_proc *gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	struct pyebpf_py_proc *proc = pyebpf_lookup_proc(tgid);
	struct pyebpf_gil_wait w = {};
	struct gil_state st = {};

	if (!gp || !proc)
		return 0;
	pyebpf_count(PYEBPF_CNT_HITS);
	w.start_ns = bpf_ktime_get_ns();
	w.nvcsw = bpf_get_current_task_btf()->nvcsw;
	if (!read_gil_state(gp, &st))
		begin_wait(gp, proc, tgid, &st, &w);
	bpf_map_update_elem(&waits, &tid, &w, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int take_gil_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct pyebpf_gil_proc *gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	__u64 now = bpf_ktime_get_ns();
	struct pyebpf_gil_wait *found;
	struct gil_state st = {};

	found = bpf_map_lookup_elem(&waits, &tid);
	if (!found)
		return 0;
	if (gp) {
		if (read_gil_state(gp, &st))
			st.switch_number = found->switch_number;
		/* The record itself, not a copy: the walks' global function and
		 * its callback leave this program less than 512 bytes of stack. */
		end_wait(gp, tgid, tid, found, now, PYEBPF_GIL_HOOK_TAKE_GIL, st.switch_number, true, NULL);
	}
	bpf_map_delete_elem(&waits, &tid);
	return 0;
}

/* --- hook pair 2: pthread_cond_timedwait(&gil->cond, &gil->mutex, ...) ------ */

SEC("uprobe")
int cond_wait_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct pyebpf_gil_proc *gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	struct pyebpf_py_proc *proc;
	struct pyebpf_gil_wait *found, w = {};
	struct gil_state st = {};
	__u64 now;

	if (!gp || PT_REGS_PARM1(ctx) != gp->cond)
		return 0;
	proc = pyebpf_lookup_proc(tgid);
	if (!proc)
		return 0;
	pyebpf_count(PYEBPF_CNT_HITS);
	now = bpf_ktime_get_ns();
	found = bpf_map_lookup_elem(&waits, &tid);
	if (found) {
		if (!found->in_cond && now - found->last_ns < PYEBPF_GIL_STALE_NS) {
			found->in_cond = 1; /* the next round of the same take_gil() loop */
			return 0;
		}
		pyebpf_count(PYEBPF_GIL_CNT_STALE);
	}
	w.start_ns = now;
	w.last_ns = now;
	w.in_cond = 1;
	if (read_gil_state(gp, &st))
		return 0;
	begin_wait(gp, proc, tgid, &st, &w);
	bpf_map_update_elem(&waits, &tid, &w, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int cond_wait_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct pyebpf_gil_wait *found;
	struct pyebpf_gil_proc *gp;
	struct gil_state st = {};
	__u64 now;

	found = bpf_map_lookup_elem(&waits, &tid);
	if (!found || !found->in_cond)
		return 0;
	gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	if (!gp)
		return 0;
	now = bpf_ktime_get_ns();
	if (read_gil_state(gp, &st)) {
		bpf_map_delete_elem(&waits, &tid);
		return 0;
	}
	if (st.locked) {
		/* Timed out or woken while still held: take_gil() waits again. */
		found->in_cond = 0;
		found->last_ns = now;
		return 0;
	}
	/* Free, and this thread holds gil->mutex: it takes the GIL now. */
	end_wait(gp, tgid, tid, found, now, PYEBPF_GIL_HOOK_COND_WAIT, st.switch_number, true, NULL);
	bpf_map_delete_elem(&waits, &tid);
	return 0;
}

/* --- hook 3: the scheduler ---------------------------------------------------
 *
 * take_gil() sleeps only in futex waits on the GIL's condition variable (the
 * timed wait of each round) and mutex; glibc keeps those futex words inside
 * the pthread_cond_t and at the start of the pthread_mutex_t. So a target
 * thread switching out inside the futex system call with such an address
 * (its saved registers: bpf_task_pt_regs) is waiting for the GIL, and when it
 * resumes (sched_exit_tp, in its own context) and finds the GIL free it takes
 * it: the wait ends, and the stacks of both threads are walked then, as the
 * uretprobe of cond_wait did, with no probe in the target. A resume that
 * finds the GIL held (a timed-out round, or another thread took it first)
 * leaves the wait open; the thread's next switch-out tells whether it took
 * the GIL meanwhile (the switch number, below). Two racers that both see it
 * free at their resumes each report a wait; the loser then starts another.
 */

/* The PyThreadState of `task`, a thread of target `tgid`; 0 if not found.
 * Looked up only where needed: py_procs is one more lookup per switch. */
static __always_inline __u64 find_self(__u32 tgid, struct task_struct *task, __u32 tid)
{
	struct pyebpf_py_proc *proc = pyebpf_lookup_proc(tgid);

	return proc ? pyebpf_find_tstate(proc, pyebpf_thread_pointer(task), tid) : 0;
}

/*
 * Whether the thread of `w`, which resumed at w->last_ns with the GIL held by
 * another thread (switch number w->wake_sn then), has not taken it since:
 * nobody took it, or one thread did and it is not this one (its own take
 * would come first, and another's after it makes two). Two takes in those
 * microseconds read as this thread's: the wait is then split in two.
 */
static __always_inline bool still_waiting(__u32 tgid, struct pyebpf_gil_wait *w, const struct gil_state *st,
					  struct task_struct *task, __u32 tid)
{
	if (st->switch_number == w->wake_sn)
		return true;
	if (st->switch_number != w->wake_sn + 1)
		return false;
	if (!w->self)
		w->self = find_self(tgid, task, tid);
	return w->self && st->holder != w->self;
}

/*
 * sched hook: the waiter's Python stack, walked at a resume that found the GIL
 * still held (start_ns: of the wait it belongs to). Often that thread takes
 * the GIL without sleeping again: the round timed out, it asked the holder to
 * drop the GIL, and the holder did before its next futex wait began. Its end
 * is then seen only at its next switch-out, when its frames have moved on.
 */
struct gil_stashed_stack {
	__u64 start_ns;
	struct pyebpf_py_stack st;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct gil_stashed_stack);
} waiter_stacks SEC(".maps");

/*
 * At a resume of the waiter of `w` that found the GIL held: keep its stack if
 * the wait would be reported with it, should it end now.
 */
static __always_inline void stash_waiter_stack(struct pyebpf_gil_proc *gp, __u32 tgid, __u32 tid,
					       struct pyebpf_gil_wait *w, __u64 now)
{
	struct gil_stashed_stack *stash;
	struct pyebpf_py_proc *proc;
	void *scratch;
	__u32 zero = 0;

	if (!targ_py_enable || now - w->start_ns < targ_min_wait_ns || now - w->start_ns < targ_py_min_ns ||
	    !event_budget_left(gp, now))
		return;
	proc = pyebpf_lookup_proc(tgid);
	if (!proc)
		return;
	if (!w->self)
		w->self = pyebpf_find_tstate(proc, pyebpf_thread_pointer(bpf_get_current_task_btf()), tid);
	stash = bpf_map_lookup_elem(&waiter_stacks, &tid);
	if (!stash) {
		/* made from any bytes big enough: the walk and start_ns fill it */
		scratch = bpf_map_lookup_elem(&event_scratch, &zero);
		if (!scratch)
			return;
		bpf_map_update_elem(&waiter_stacks, &tid, scratch, BPF_ANY);
		stash = bpf_map_lookup_elem(&waiter_stacks, &tid);
		if (!stash)
			return;
	}
	pyebpf_walk_stack(proc, w->self, &stash->st);
	stash->start_ns = w->start_ns;
}

/*
 * A wait of the switching-out thread ended at its last resume without that
 * resume finding the GIL free: the holder let it go in the microseconds after,
 * and the thread took it. Reported now, with the waiter's stack walked at
 * that resume if it was.
 */
static __always_inline void end_unseen(struct pyebpf_gil_proc *gp, __u32 tgid, __u32 tid, struct pyebpf_gil_wait *w)
{
	struct gil_stashed_stack *stash = bpf_map_lookup_elem(&waiter_stacks, &tid);

	pyebpf_count(PYEBPF_GIL_CNT_END_UNSEEN);
	end_wait(gp, tgid, tid, w, w->last_ns, PYEBPF_GIL_HOOK_SCHED, w->wake_sn, false,
		 stash && stash->start_ns == w->start_ns ? &stash->st : NULL);
}

/*
 * sched hook: the wait of a target thread (start_ns 0: none open) is the gil
 * part of the thread's record in thread_records (thread_record.bpf.h), kept
 * for the thread's life and reused: making and deleting an entry per wait
 * cost more than the rest of the wait's hooks.
 */
static __always_inline struct pyebpf_gil_wait *sched_wait_of(struct task_struct *task, bool create)
{
	return pyebpf_thread_part(task, create, gil);
}

/* The wait record of thread `tid` to open a wait in: its own, else a new one. */
static __always_inline struct pyebpf_gil_wait *sched_wait_record(struct pyebpf_gil_wait *w, struct task_struct *task)
{
	return w ? w : sched_wait_of(task, true);
}

/*
 * Thread `prev` (`tid`, record `w` if it has one) switches out in a futex
 * wait on the GIL's condition variable or mutex at `futex`, the GIL's state
 * `st`: a new wait, unless it is none. take_gil waits on the condition
 * variable only while the GIL is held; on the mutex, it is a wait only while
 * another thread holds the GIL (drop_gil locks it too, in the holder).
 */
static __always_inline void open_wait(const struct pyebpf_gil_proc *gp, struct pyebpf_gil_wait *w,
				      struct task_struct *prev, __u32 tid, __u64 futex, const struct gil_state *st)
{
	__u64 self = w ? w->self : 0;

	if (futex == gp->mutex) {
		if (!st->locked)
			return;
		if (!self)
			self = find_self(prev->tgid, prev, tid);
		if (!self || st->holder == self)
			return;
	}
	w = sched_wait_record(w, prev);
	if (!w)
		return;
	w->start_ns = bpf_ktime_get_ns();
	w->last_ns = w->start_ns;
	w->switch_number = st->switch_number;
	/* On the condition variable, the GIL was held when the thread began to
	 * wait: its last holder then, even if it has let it go since (drop_gil
	 * stores itself in last_holder before it unlocks). Named if reported. */
	w->holder_tstate = st->holder;
	w->holder_thread_id = 0;
	w->holder_tid = 0;
	w->holder_ns_tid = 0;
	w->self = self;
	w->in_cond = 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(gil_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tgid = prev->tgid, tid;
	struct pyebpf_gil_proc *gp;
	struct gil_state st = {};
	__u64 futex = 0;
	bool open, gil_sleep;
	struct pyebpf_gil_wait *w;

	/* A preemption neither starts nor ends a wait: the thread stays
	 * runnable. Then, as every hook of the host, the target filter. */
	if (preempt || prev_state == 0 /* TASK_RUNNING */ || !pyebpf_maybe_proc(tgid))
		return 0;
	tid = prev->pid;
	if (pyebpf_task_syscall(prev, &futex) != PYEBPF_NR_FUTEX)
		futex = 0;
	w = sched_wait_of(prev, false);
	open = w && w->start_ns;
	if (!futex && !open)
		return 0; /* a target thread's usual sleep: no GIL wait starts or ends */
	gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	if (!gp || gp->hook != PYEBPF_GIL_HOOK_SCHED)
		return 0;
	pyebpf_count(PYEBPF_CNT_HITS);
	gil_sleep = futex && (futex - gp->cond < PYEBPF_GIL_COND_BYTES || futex == gp->mutex);
	if (gil_sleep && read_gil_state(gp, &st))
		return 0;
	if (open) {
		/* Another round of the same wait, or the wait ended at its last
		 * resume (also when the thread now sleeps on something else). */
		if (gil_sleep && !w->in_cond && still_waiting(tgid, w, &st, prev, tid)) {
			w->in_cond = 1;
			return 0;
		}
		if (!w->in_cond)
			end_unseen(gp, tgid, tid, w);
		else if (gil_sleep)
			pyebpf_count(PYEBPF_GIL_CNT_STALE); /* its resume was not seen */
		w->start_ns = 0;
	}
	if (gil_sleep)
		open_wait(gp, w, prev, tid, futex, &st);
	return 0;
}

/* End of __schedule, in the thread that now runs: a GIL sleep of it ends. */
SEC("tp_btf/sched_exit_tp")
int gil_sched_resume(__u64 *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid;
	struct pyebpf_gil_proc *gp;
	struct pyebpf_gil_wait *found;
	struct gil_state st = {};
	__u64 now;

	if (!pyebpf_maybe_proc(tgid))
		return 0;
	tid = task->pid;
	found = sched_wait_of(task, false);
	if (!found || !found->start_ns || !found->in_cond)
		return 0;
	gp = bpf_map_lookup_elem(&gil_procs, &tgid);
	if (!gp || read_gil_state(gp, &st))
		return 0;
	now = bpf_ktime_get_ns();
	if (st.locked) {
		/* Still held (the round timed out, or another thread took it
		 * first): the wait goes on, unless this thread takes it in the
		 * microseconds before its next check (its next switch-out tells). */
		found->in_cond = 0;
		found->last_ns = now;
		found->wake_sn = st.switch_number;
		stash_waiter_stack(gp, tgid, tid, found, now);
		return 0;
	}
	end_wait(gp, tgid, tid, found, now, PYEBPF_GIL_HOOK_SCHED, st.switch_number, true, NULL);
	found->start_ns = 0;
	return 0;
}

/* --- thread pointer -> host tid, for naming holders ------------------------- */

SEC("iter/task")
int gil_scan_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u32 tgid;

	if (!task)
		return 0;
	tgid = task->tgid;
	if (bpf_map_lookup_elem(&gil_procs, &tgid))
		remember_thread(task);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(gil_thread_new, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = child->tgid;

	/* Every fork and thread of the host comes here; gil's targets are in
	 * py_procs, whose filter rules out nearly all without a hash lookup. */
	if (pyebpf_maybe_proc(tgid) && bpf_map_lookup_elem(&gil_procs, &tgid))
		remember_thread(child);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gil_thread_exit, struct task_struct *task)
{
	struct pyebpf_gil_thread_key key = {};
	struct pyebpf_gil_thread *t;
	__u32 tid;

	key.tgid = task->tgid;
	if (!bpf_map_lookup_elem(&gil_procs, &key.tgid))
		return 0;
	tid = task->pid;
	key.thread_id = pyebpf_thread_pointer(task);
	t = bpf_map_lookup_elem(&thread_ids, &key);
	if (t && t->tid == tid)
		bpf_map_delete_elem(&thread_ids, &key);
	bpf_map_delete_elem(&waits, &tid);
	bpf_map_delete_elem(&waiter_stacks, &tid);
	return 0;
}
