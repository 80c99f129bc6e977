// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * lifecycle: follows the targets' process tree with the scheduler's fork, exec
 * and exit tracepoints, so workers forked or re-executed after start are
 * traced too (docs/design.md, "Following processes").
 *
 * Every host fork and exec runs these programs, so the host pays one hash
 * lookup per fork and exec; only tracked lineages reach user space, plus the
 * execs whose command line holds the --name needle (a literal part of the
 * pattern; user space applies the whole pattern).
 *
 * At fork the child inherits the parent's py_procs entry: it is a copy of the
 * parent's address space, so py_stack samples it before user space has even
 * read the event. At exec the process's py_procs entry is dropped here, in the
 * exec itself, so no stack is ever walked with the old layout; user space
 * rediscovers it once the new program is up.
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include "lifecycle.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool targ_follow_children = true;
const volatile __u32 targ_needle_len = 0;   /* 0: no --name, or a pattern without a literal needle */
const volatile bool targ_all_execs = false; /* --name whose pattern has no needle: report every exec */
const volatile char targ_needle[PYEBPF_LIFECYCLE_NEEDLE_MAX] = {};

/*
 * Targets and their descendants (host tgid -> execs seen), filled by user
 * space and by fork. The count tells user space that a process it was
 * attaching exec'd meanwhile, so what it read describes a gone layout.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} lineage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[PYEBPF_LIFECYCLE_ARGS_LEN]);
} args_scratch SEC(".maps");

static __always_inline void emit(__u32 kind, struct task_struct *task, __u32 pid, __u32 parent, __u32 flags)
{
	struct pyebpf_lifecycle_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->kind = kind;
	ev->pid = pid;
	ev->parent = parent;
	ev->flags = flags;
	BPF_CORE_READ_STR_INTO(&ev->comm, task, comm);
	/* Rare (lineage forks, execs, exits) and latency-bound: a new worker is attached from it. */
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	pyebpf_count(PYEBPF_CNT_EVENTS);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(lifecycle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid; /* BTF pointers: plain loads, no probe reads */
	struct pyebpf_py_proc *proc;
	__u32 zero = 0;

	/* A new thread shares its parent's tgid: not a new process. */
	if (!targ_follow_children || ctgid == ptgid || !bpf_map_lookup_elem(&lineage, &ptgid))
		return 0;
	pyebpf_count(PYEBPF_LIFECYCLE_CNT_FORKS);
	if (bpf_map_update_elem(&lineage, &ctgid, &zero, BPF_ANY)) {
		pyebpf_count(PYEBPF_LIFECYCLE_CNT_LINEAGE_FULL);
		return 0;
	}
	/*
	 * vfork (posix_spawn, subprocess): the child borrows the parent's address
	 * space until it execs, and runs no Python of its own; its exec is what
	 * matters, and it is in the lineage for that.
	 */
	if (child->mm == parent->mm)
		return 0;
	proc = pyebpf_lookup_proc(ptgid);
	if (proc) {
		/* The parent's process image is not the child's: code objects
		 * are not remembered across its walks (pyebpf_memo_epoch) until
		 * user space registers it with an image of its own. */
		struct pyebpf_py_proc copy = *proc;

		copy.main_interp = 0;
		pyebpf_add_proc(ctgid, &copy);
	}
	emit(PYEBPF_LIFECYCLE_FORK, child, ctgid, ptgid, PYEBPF_LIFECYCLE_TRACKED);
	return 0;
}

struct needle_ctx {
	const char *args;
	__u32 last; /* last start position to try */
	bool found;
};

/* Compares the needle at position `pos` of the command line (NULs read as spaces, as pgrep -f joins argv). */
static int needle_at(__u32 pos, struct needle_ctx *ctx)
{
	if (pos > ctx->last)
		return 1;
	for (__u32 i = 0; i < PYEBPF_LIFECYCLE_NEEDLE_MAX; i++) {
		char c;

		if (i >= targ_needle_len) {
			ctx->found = true;
			return 1;
		}
		c = ctx->args[(pos + i) & (PYEBPF_LIFECYCLE_ARGS_LEN - 1)];
		if ((c ? c : ' ') != targ_needle[i])
			return 0;
	}
	ctx->found = true;
	return 1;
}

static __always_inline bool args_hold_needle(struct task_struct *task)
{
	struct needle_ctx ctx = {};
	__u32 zero = 0;
	__u64 start, end, len;
	char *args;

	if (targ_all_execs)
		return true;
	if (!targ_needle_len)
		return false;
	args = bpf_map_lookup_elem(&args_scratch, &zero);
	if (!args)
		return false;
	start = task->mm->arg_start;
	end = task->mm->arg_end;
	len = end > start ? end - start : 0;
	if (len > PYEBPF_LIFECYCLE_ARGS_LEN)
		len = PYEBPF_LIFECYCLE_ARGS_LEN;
	if (len < targ_needle_len || bpf_probe_read_user(args, len, (const void *)start))
		return false;
	ctx.args = args;
	ctx.last = len - targ_needle_len;
	bpf_loop(PYEBPF_LIFECYCLE_ARGS_LEN, needle_at, &ctx, 0);
	return ctx.found;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(lifecycle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task->tgid, old = old_pid;
	__u32 flags = 0, *execs;

	execs = bpf_map_lookup_elem(&lineage, &tgid);
	if (execs) {
		__sync_fetch_and_add(execs, 1);
		/* The old address space is gone: so is every layout and thread state read in it. */
		pyebpf_remove_proc(tgid);
		bpf_map_delete_elem(&py_tstates, &tgid);
		bpf_map_delete_elem(&py_tstates, &old);
		flags |= PYEBPF_LIFECYCLE_TRACKED;
	}
	if (args_hold_needle(task))
		flags |= PYEBPF_LIFECYCLE_NEEDLE;
	if (!flags)
		return 0;
	pyebpf_count(PYEBPF_LIFECYCLE_CNT_EXECS);
	emit(PYEBPF_LIFECYCLE_EXEC, task, tgid, 0, flags);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(lifecycle_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	/* Threads exit one by one; the process is gone with its last one. */
	if (task->signal->live.counter != 0 || !bpf_map_lookup_elem(&lineage, &tgid))
		return 0;
	bpf_map_delete_elem(&lineage, &tgid); /* the pid may be reused by an unrelated process */
	pyebpf_remove_proc(tgid);
	emit(PYEBPF_LIFECYCLE_EXIT, task, tgid, 0, PYEBPF_LIFECYCLE_TRACKED);
	return 0;
}
