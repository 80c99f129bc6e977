// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * py_stack: CPU profiler. A software CPU-clock perf event fires on every CPU at
 * the configured frequency; samples of threads outside the target processes
 * return after one hash lookup. For target threads the thread's own Python
 * stack is walked (python.bpf.h) and sent with only the frames it holds.
 */
#include "python.bpf.h"
#include "py_stack.h"
#include "ringbuf.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 targ_wakeup_bytes = 1; /* a quarter of the ring (py_stack.h) */

/* Sized by user space before load (py_stack.h). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_py_stack_event);
} sample_scratch SEC(".maps");

SEC("perf_event")
int sample_python_stack(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct pyebpf_py_stack_event *ev;
	struct pyebpf_py_proc *proc;
	__u32 zero = 0;
	__u64 size;

	proc = pyebpf_lookup_proc(pid_tgid >> 32);
	if (!proc)
		return 0;
	pyebpf_count(PYEBPF_CNT_HITS);
	ev = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!ev)
		return 0;
	pyebpf_fill_header(&ev->hdr, task, bpf_ktime_get_ns());
	pyebpf_walk_stack(proc, pyebpf_find_tstate(proc, ev->hdr.thread_id, (__u32)pid_tgid), &ev->stack);
	if (ev->stack.status == PYEBPF_STACK_NO_TSTATE) {
		/* A native-only thread (no PyThreadState): nothing Python to report. */
		pyebpf_count(PYEBPF_CNT_NO_TSTATE);
		return 0;
	}
	size = PYEBPF_PY_STACK_EVENT_BYTES(ev->stack.depth);
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size, pyebpf_rb_wake_past(&events, targ_wakeup_bytes))) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return 0;
	}
	pyebpf_count(PYEBPF_CNT_EVENTS);
	return 0;
}
