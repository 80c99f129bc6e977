/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* BPF-only helpers about the current task: identity, thread pointer, counters. */
#ifndef PYEBPF_TASK_BPF_H
#define PYEBPF_TASK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYEBPF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Adds `value` to a counter slot (a count, or a sum such as nanoseconds). */
static __always_inline void pyebpf_count_add(__u32 counter, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&counters, &counter);

	if (slot)
		*slot += value; /* per-CPU slot: no atomics needed */
}

static __always_inline void pyebpf_count(__u32 counter)
{
	pyebpf_count_add(counter, 1);
}

/*
 * A scalar field of the kernel object at `ptr`. Where `ptr` is BTF-typed (from
 * bpf_get_current_task_btf(), a tp_btf or iterator argument) and `btf` says
 * so, a plain load the verifier guards; otherwise (raw_tp arguments)
 * BPF_CORE_READ, a helper call per field (~30 ns each here). `btf` must be a
 * constant once inlined: the branch not taken is compiled out, or the
 * verifier would reject a load through a plain pointer. Not for pointer
 * fields in the walkers' programs: for every load of one through a trusted
 * pointer, in every state it verifies, the verifier looks a type up by name
 * across all of the kernel's BTF (btf_nested_type_is_trusted), which made
 * loading gil's and gc's objects ~30 ms slower each (lifecycle's few-state
 * programs do load task->mm directly).
 */
#define PYEBPF_KREAD(btf, ptr, field) ((btf) ? (ptr)->field : BPF_CORE_READ(ptr, field))

/*
 * The thread pointer (TLS base) of a task. On x86-64 and arm64 it is also what
 * pthread_self() returns with glibc and musl, so it equals the pthread_t that
 * CPython stores in PyThreadState.thread_id: a thread's identity that needs no
 * pid-namespace translation.
 */
static __always_inline __u64 pyebpf_task_thread_pointer(struct task_struct *task, bool btf)
{
#if defined(__TARGET_ARCH_x86)
	return PYEBPF_KREAD(btf, task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	return PYEBPF_KREAD(btf, task, thread.uw.tp_value);
#else
#error "pyebpf: thread pointer not known for this architecture"
#endif
}

/* The same for a BTF-typed task, as every caller but offcpu's raw_tp hooks has. */
static __always_inline __u64 pyebpf_thread_pointer(struct task_struct *task)
{
	return pyebpf_task_thread_pointer(task, true);
}

/* The number of the system call `task` is in (x86-64 and arm64: the futex
 * call is PYEBPF_NR_FUTEX) and its first argument, from the user registers
 * saved at its entry; a number < 0 when it is in none (an interrupt or
 * exception entered the kernel). For a task switching out or resuming. */
#if defined(__TARGET_ARCH_x86)
#define PYEBPF_NR_FUTEX 202
#elif defined(__TARGET_ARCH_arm64)
#define PYEBPF_NR_FUTEX 98
#endif

static __always_inline long pyebpf_task_syscall(struct task_struct *task, __u64 *arg0)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

#if defined(__TARGET_ARCH_x86)
	*arg0 = regs->di;
	return (long)regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	*arg0 = regs->orig_x0;
	return (long)regs->syscallno;
#endif
}

/* Id of a struct pid as seen from its innermost pid namespace (the container's). */
static __always_inline __u32 pyebpf_ns_id(struct pid *pid)
{
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid upid = {};

	bpf_core_read(&upid, sizeof(upid), &pid->numbers[level]);
	return upid.nr;
}

/* Fills the common header for `task` (the current task, or a switched-out one). */
static __always_inline void pyebpf_fill_task_header(struct pyebpf_event_header *hdr, struct task_struct *task,
						    __u64 ts_ns, bool btf)
{
	hdr->ts_ns = ts_ns;
	hdr->pid = PYEBPF_KREAD(btf, task, tgid);
	hdr->tid = PYEBPF_KREAD(btf, task, pid);
	hdr->ns_tid = pyebpf_ns_id(BPF_CORE_READ(task, thread_pid));
	hdr->ns_pid = pyebpf_ns_id(BPF_CORE_READ(task, group_leader, thread_pid));
	hdr->thread_id = pyebpf_task_thread_pointer(task, btf);
	hdr->cpu = bpf_get_smp_processor_id();
	hdr->pad = 0;
	if (btf)
		__builtin_memcpy(hdr->comm, task->comm, sizeof(hdr->comm)); /* user space stops at the NUL */
	else
		BPF_CORE_READ_STR_INTO(&hdr->comm, task, comm);
}

/* The same for a BTF-typed task, as every caller but offcpu's raw_tp hooks has. */
static __always_inline void pyebpf_fill_header(struct pyebpf_event_header *hdr, struct task_struct *task, __u64 ts_ns)
{
	pyebpf_fill_task_header(hdr, task, ts_ns, true);
}

#endif /* PYEBPF_TASK_BPF_H */
