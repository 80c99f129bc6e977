/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* py_stack tracker: one event per perf sample of a target thread. */
#ifndef PYEBPF_PY_STACK_H
#define PYEBPF_PY_STACK_H

#include "python.h"

struct pyebpf_py_stack_event {
	struct pyebpf_event_header hdr;
	struct pyebpf_py_stack stack; /* last: only PYEBPF_STACK_BYTES(depth) of it are sent */
};

#define PYEBPF_PY_STACK_EVENT_BYTES(depth) \
	(sizeof(struct pyebpf_event_header) + PYEBPF_STACK_BYTES(depth))

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_stack_event) ==
			     sizeof(struct pyebpf_event_header) + sizeof(struct pyebpf_py_stack),
		     "py_stack event layout");

#endif /* PYEBPF_PY_STACK_H */
