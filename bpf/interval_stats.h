/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Durations counted in BPF and read by user space per interval (gc pauses,
 * GIL waits): the part of a per-CPU stats map value that
 * interval_stats.bpf.h fills and src/trackers/interval_stats.hpp reads.
 */
#ifndef PYEBPF_INTERVAL_STATS_H
#define PYEBPF_INTERVAL_STATS_H

#include "histogram.h"

/*
 * Running totals since the entry was made, so user space takes an interval
 * as the difference of two readings and the sum of all intervals is exact.
 * The longest duration cannot be differenced: it is kept per interval, in
 * the slot of the interval's epoch (stats_epoch & 1, which user space
 * advances when it reads); a slot whose max_epoch is not the epoch being read
 * saw nothing in it.
 */
struct pyebpf_interval_stats {
	__u64 count; /* durations added */
	__u64 total_ns;
	__u64 max_ns[2];
	__u32 max_epoch[2];
	__u64 hist[PYEBPF_LATENCY_BUCKETS]; /* durations in microseconds, histogram.h */
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_interval_stats) == 5 * 8 + 8 * PYEBPF_LATENCY_BUCKETS,
		     "interval stats layout");

#endif /* PYEBPF_INTERVAL_STATS_H */
