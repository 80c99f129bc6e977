/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* BPF-only: adding a duration to a struct pyebpf_interval_stats (interval_stats.h). */
#ifndef PYEBPF_INTERVAL_STATS_BPF_H
#define PYEBPF_INTERVAL_STATS_BPF_H

#include "interval_stats.h"

/* The interval the longest durations belong to; user space advances it when
 * it reads the stats (src/trackers/interval_stats.hpp). One per BPF object:
 * include this header from one .bpf.c only. */
volatile __u32 stats_epoch = 0;

static __always_inline void pyebpf_interval_add(struct pyebpf_interval_stats *s, __u64 duration_ns)
{
	__u32 epoch = stats_epoch, slot = epoch & 1, bucket;

	s->count++;
	s->total_ns += duration_ns;
	bucket = pyebpf_latency_bucket(duration_ns / 1000);
	barrier_var(bucket);
	if (bucket < PYEBPF_LATENCY_BUCKETS)
		s->hist[bucket]++;
	if (s->max_epoch[slot] != epoch) {
		s->max_epoch[slot] = epoch;
		s->max_ns[slot] = duration_ns;
	} else if (duration_ns > s->max_ns[slot]) {
		s->max_ns[slot] = duration_ns;
	}
}

#endif /* PYEBPF_INTERVAL_STATS_BPF_H */
