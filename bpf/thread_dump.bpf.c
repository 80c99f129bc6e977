// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Thread dump (thread_dump.h): a sleepable iterator over the host's tasks
 * that writes one record per thread of a target process, read by user space
 * at once (pyebpf dump; offcpu's threads blocked at the end of a run). Nothing
 * is attached to the targets and nothing stops them: their memory is read
 * with bpf_copy_from_user_task, which a sleepable program may call for any
 * task, where the trackers' hooks read their own task's with
 * bpf_probe_read_user.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* The thread whose memory the walker reads (python.bpf.h's read hook): the
 * task being dumped. One iterator runs at a time (user space reads it from
 * one thread) and a sleepable program runs with migration disabled. */
__u32 dump_tid = 0;
/* Set before a pass: only threads off their CPU at least this long get a
 * record (offcpu's check for threads blocked now); 0: every thread (dump). */
__u64 dump_min_blocked_ns = 0;

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

static long dump_read(void *dst, __u32 size, const void *src)
{
	struct task_struct *task = bpf_task_from_pid(dump_tid);
	long err;

	if (!task)
		return -1;
	err = bpf_copy_from_user_task(dst, size, src, task, 0);
	bpf_task_release(task);
	return err;
}

#define PYEBPF_READ_USER(dst, size, src) dump_read(dst, size, src)
#define PYEBPF_WALKED_TGID()		 0 /* the dump's memo lasts one walk: no image is remembered */
#include "python.bpf.h"
#include "thread_dump.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The record being built (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_thread_dump);
} record SEC(".maps");

/* The run-queue clock (what the kernel stamps sched_info with) minus
 * bpf_ktime_get_ns(), from the CPU this runs on; 0 where the kernel does not
 * say (no CONFIG_FAIR_GROUP_SCHED). */
static __always_inline __s64 rq_clock_offset(void)
{
	struct task_struct *self = bpf_get_current_task_btf();
	__u64 clock = 0;

	if (!bpf_core_field_exists(struct cfs_rq, rq))
		return 0;
	clock = BPF_CORE_READ(self, se.cfs_rq, rq, clock);
	return clock ? (__s64)(clock - bpf_ktime_get_ns()) : 0;
}

/*
 * How long the task has been in its state, from the kernel's sched_info
 * (rq clock): running since its last switch-in; runnable since it was queued;
 * asleep since it last left the CPU, which is its last switch-in plus what it
 * ran then (sum_exec_runtime grew from prev_sum_exec_runtime, which the fair
 * class sets at each switch-in; not the real-time classes: there the time
 * since its last switch-in, an upper bound). The rq clock read here may be a
 * tick old: +-4 ms.
 */
static __always_inline void time_in_state(struct task_struct *task, struct pyebpf_thread_dump *rec, __u64 now)
{
	__s64 clock_offset = rq_clock_offset();
	__u64 now_rq = now + clock_offset, arrival, queued, ran, at = 0;

	rec->since_kind = PYEBPF_DUMP_SINCE_UNKNOWN;
	rec->since_ns = 0;
	if (!clock_offset || !bpf_core_field_exists(task->sched_info.last_arrival))
		return;
	arrival = task->sched_info.last_arrival;
	queued = task->sched_info.last_queued;
	if (rec->on_cpu) {
		at = arrival;
		rec->since_kind = PYEBPF_DUMP_SINCE_SWITCH_IN;
	} else if (rec->state == 0 && queued) {
		at = queued;
		rec->since_kind = PYEBPF_DUMP_SINCE_QUEUED;
	} else if (arrival) {
		ran = task->se.sum_exec_runtime - task->se.prev_sum_exec_runtime;
		if (task->policy == 0 /* SCHED_NORMAL */ || task->policy == 3 /* BATCH */ ||
		    task->policy == 5 /* IDLE */) {
			at = arrival + ran;
			rec->since_kind = PYEBPF_DUMP_SINCE_LEFT;
		} else {
			at = arrival;
			rec->since_kind = PYEBPF_DUMP_SINCE_UPPER;
		}
	}
	if (!at || at > now_rq) {
		rec->since_kind = PYEBPF_DUMP_SINCE_UNKNOWN;
		return;
	}
	rec->since_ns = now_rq - at;
}

/* The system call the task is in and the user stack along frame pointers. */
static __always_inline void user_side(struct task_struct *task, struct pyebpf_thread_dump *rec)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 bp, frame[2];
	__u32 n = 1;

#if defined(__TARGET_ARCH_x86)
	rec->syscall = (__s64)regs->orig_ax;
	rec->args[0] = regs->di;
	rec->args[1] = regs->si;
	rec->args[2] = regs->dx;
	rec->args[3] = regs->r10;
	rec->args[4] = regs->r8;
	rec->args[5] = regs->r9;
	rec->user_sp = regs->sp;
	rec->ustack.ips[0] = regs->ip;
	bp = regs->bp;
#elif defined(__TARGET_ARCH_arm64)
	rec->syscall = regs->syscallno;
	rec->args[0] = regs->orig_x0;
	for (int i = 1; i < 6; i++)
		rec->args[i] = regs->regs[i];
	rec->user_sp = regs->sp;
	rec->ustack.ips[0] = regs->pc;
	bp = regs->regs[29];
#endif
	for (; n < PYEBPF_DUMP_USER_FRAMES; n++) {
		if (!bp || (bp & 7) || dump_read(frame, sizeof(frame), (const void *)bp) || !frame[1])
			break;
		rec->ustack.ips[n & (PYEBPF_DUMP_KERNEL_FRAMES - 1)] = frame[1];
		if (frame[0] <= bp) /* a caller's frame lies above its callee's */
			break;
		bp = frame[0];
	}
	rec->ustack.depth = n;
}

SEC("iter.s/task")
int dump_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct pyebpf_thread_dump *rec;
	struct pyebpf_py_proc *proc;
	__u32 zero = 0, tgid;
	long bytes;
	__u64 now;

	if (!task)
		return 0;
	tgid = task->tgid;
	proc = pyebpf_lookup_proc(tgid);
	rec = bpf_map_lookup_elem(&record, &zero);
	if (!proc || !rec || (task->flags & 0x00200000 /* PF_KTHREAD */))
		return 0;
	now = bpf_ktime_get_ns();
	dump_tid = task->pid;
	pyebpf_fill_header(&rec->hdr, task, now);
	rec->hdr.cpu = task->thread_info.cpu;
	rec->state = task->__state;
	rec->exit_state = task->exit_state;
	rec->on_cpu = task->on_cpu;
	rec->voluntary_switches = task->nvcsw;
	rec->involuntary_switches = task->nivcsw;
	time_in_state(task, rec, now);
	if (dump_min_blocked_ns &&
	    (rec->on_cpu || rec->state == 0 /* TASK_RUNNING: runnable */ ||
	     rec->since_kind == PYEBPF_DUMP_SINCE_UNKNOWN || rec->since_ns < dump_min_blocked_ns))
		return 0;
	bytes = bpf_get_task_stack(task, rec->kstack.ips, sizeof(rec->kstack.ips), 0);
	rec->kstack.depth = bytes > 0 ? bytes / sizeof(__u64) : 0;
	user_side(task, rec);
	pyebpf_walk_stack_at(proc, pyebpf_find_tstate(proc, rec->hdr.thread_id, task->pid), &rec->py, rec->py_frames);
	bpf_seq_write(ctx->meta->seq, rec, sizeof(*rec));
	return 0;
}
