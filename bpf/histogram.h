/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* A latency histogram BPF fills and user space reads (src/trackers/latency_histogram.hpp). */
#ifndef PYEBPF_HISTOGRAM_H
#define PYEBPF_HISTOGRAM_H

#include "common.h"

/*
 * Latency histogram in microseconds (handoff waits, GC pauses), log-linear: values 0-3 have a bucket
 * each, then every power of two [2^e, 2^(e+1)) is split in 4 equal buckets (at
 * most 25% wide, so a percentile read from it is within 12.5% of the truth).
 * The last bucket also holds everything from 2^32 us (71 min) up.
 */
#define PYEBPF_LATENCY_BUCKETS 124

#ifdef __cplusplus
#define PYEBPF_LATENCY_INLINE inline
#else
#define PYEBPF_LATENCY_INLINE static __always_inline
#endif

/* Bucket of a latency of `us` microseconds; shared so user space decodes what BPF counted. */
PYEBPF_LATENCY_INLINE __u32 pyebpf_latency_bucket(__u64 us)
{
	__u64 v = us;
	__u32 e = 0;

	if (us < 4)
		return (__u32)us;
	if (us >> 32)
		return PYEBPF_LATENCY_BUCKETS - 1;
	if (v >> 16) {
		v >>= 16;
		e += 16;
	}
	if (v >> 8) {
		v >>= 8;
		e += 8;
	}
	if (v >> 4) {
		v >>= 4;
		e += 4;
	}
	if (v >> 2) {
		v >>= 2;
		e += 2;
	}
	if (v >> 1) {
		e += 1;
	}
	/* e = floor(log2(us)) >= 2: 4 buckets per power of two from index 4 on */
	return 4 * (e - 1) + (__u32)((us >> (e - 2)) & 3);
}

#endif /* PYEBPF_HISTOGRAM_H */
