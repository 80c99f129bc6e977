/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* py_stack tracker: one event per perf sample of a target thread. */
#ifndef PYEBPF_PY_STACK_H
#define PYEBPF_PY_STACK_H

#include "python.h"

struct pyebpf_py_stack_event {
	struct pyebpf_event_header hdr;
	struct pyebpf_py_stack stack; /* last: only PYEBPF_STACK_BYTES(depth) of it are sent */
};

#define PYEBPF_PY_STACK_EVENT_BYTES(depth) (sizeof(struct pyebpf_event_header) + PYEBPF_STACK_BYTES(depth))

/*
 * A sample never wakes the reader by itself: a reader woken by every sample
 * runs right after it, often on another CPU just before that CPU's own sample,
 * which then sees pyebpf instead of the target (one of two busy CPUs lost up
 * to 90% of its samples that way). BPF wakes it once a quarter of the ring is
 * waiting; otherwise the reader drains the ring every PYEBPF_PY_STACK_POLL_MS,
 * jittered. The ring holds PYEBPF_PY_STACK_RING_S of samples at the
 * sampling rate on every CPU with the deepest stacks.
 */
#define PYEBPF_PY_STACK_POLL_MS 100
#define PYEBPF_PY_STACK_RING_S	1

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_stack_event) ==
			     sizeof(struct pyebpf_event_header) + sizeof(struct pyebpf_py_stack),
		     "py_stack event layout");

#endif /* PYEBPF_PY_STACK_H */
