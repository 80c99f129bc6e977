/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Process lifecycle: which processes the targets fork, which of them exec, and
 * which exec'd command lines may match --name. Shared by
 * bpf/lifecycle.bpf.c and src/app/lifecycle.cpp.
 */
#ifndef PYEBPF_LIFECYCLE_H
#define PYEBPF_LIFECYCLE_H

#include "common.h"

/* Bytes of an exec'd command line searched for the --name needle, and the needle's size. */
#define PYEBPF_LIFECYCLE_ARGS_LEN   512
#define PYEBPF_LIFECYCLE_NEEDLE_MAX 32

enum pyebpf_lifecycle_kind {
	PYEBPF_LIFECYCLE_FORK = 1, /* a tracked process forked a new process (pid = child) */
	PYEBPF_LIFECYCLE_EXEC = 2, /* a tracked process, or one whose command line has the needle, exec'd */
	PYEBPF_LIFECYCLE_EXIT = 3, /* the last thread of a tracked process exited */
};

/* Why the process is reported (bits). */
enum pyebpf_lifecycle_flag {
	PYEBPF_LIFECYCLE_TRACKED = 1, /* in the lineage map: a target or a target's descendant */
	PYEBPF_LIFECYCLE_NEEDLE = 2,  /* its new command line holds the --name needle */
};

struct pyebpf_lifecycle_event {
	__u64 ts_ns;  /* CLOCK_MONOTONIC */
	__u32 kind;   /* enum pyebpf_lifecycle_kind */
	__u32 pid;    /* host tgid of the process concerned */
	__u32 parent; /* fork: the parent's tgid; otherwise 0 */
	__u32 flags;  /* enum pyebpf_lifecycle_flag */
	char comm[PYEBPF_COMM_LEN];
};

/* Lifecycle counters, after the common ones. */
enum pyebpf_lifecycle_counter {
	PYEBPF_LIFECYCLE_CNT_LINEAGE_FULL = PYEBPF_CNT_TRACKER_BASE, /* a child not followed: lineage map full */
	PYEBPF_LIFECYCLE_CNT_FORKS,				     /* tracked processes forked */
	PYEBPF_LIFECYCLE_CNT_EXECS,				     /* tracked or matching processes exec'd */
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_lifecycle_event) == 40, "lifecycle event layout");

#endif /* PYEBPF_LIFECYCLE_H */
