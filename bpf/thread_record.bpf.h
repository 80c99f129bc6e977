/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
#ifndef PYEBPF_THREAD_RECORD_BPF_H
#define PYEBPF_THREAD_RECORD_BPF_H

/*
 * One task-storage record per target thread for the trackers that keep
 * per-thread state at every context switch (gil's sched hook, offcpu's tp_btf
 * hooks), each in its own part. One map instead of one per tracker: at a
 * switch the second tracker's lookup finds the record the first one has just
 * brought into the cache (the storage's cache slot, the element, the line),
 * and the resume after a switch-in finds the record offcpu's switch-in looked
 * up. User space creates the map once (bpf_runtime/shared_maps.cpp) and every
 * object that declares it reuses it, so the parts are one element.
 *
 * A zeroed part is the state a tracker makes a new record in: a record the
 * other tracker created reads as "nothing open". Only a thread whose process
 * is no longer a target has its record deleted (offcpu); otherwise it lives
 * as long as its thread.
 */

#include "gil.h"
#include "offcpu.h"

struct pyebpf_thread_record {
	struct pyebpf_offcpu_thread offcpu;
	struct pyebpf_gil_wait gil;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pyebpf_thread_record);
} thread_records SEC(".maps");

/* The `part` (gil, offcpu) of `task`'s record, the record made (zeroed) if
 * `create`; NULL if it has none. The barrier keeps the part's offset after
 * the null check: the verifier refuses arithmetic on a pointer that may be
 * NULL, which is what the compiler would otherwise emit. */
#define pyebpf_thread_part(task, create, part)                                                                         \
	({                                                                                                             \
		struct pyebpf_thread_record *record__ = bpf_task_storage_get(                                          \
			&thread_records, (task), NULL, (create) ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);                 \
		typeof(&record__->part) part__ = NULL;                                                                 \
		if (record__) {                                                                                        \
			barrier_var(record__);                                                                         \
			part__ = &record__->part;                                                                      \
		}                                                                                                      \
		part__;                                                                                                \
	})

#endif
