/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * handoff tracker: how long a server's connection waits between the thread that
 * queues it (accept4, or epoll_ctl DEL out of the poller) and the first read of
 * it by another thread of the same process (the worker picking the request up).
 */
#ifndef PYEBPF_HANDOFF_H
#define PYEBPF_HANDOFF_H

#include "common.h"

enum pyebpf_handoff_path {
	PYEBPF_HANDOFF_PATH_UNKNOWN = 0,
	PYEBPF_HANDOFF_PATH_ACCEPT = 1,	   /* accept4/accept returned the fd */
	PYEBPF_HANDOFF_PATH_EPOLL_DEL = 2, /* epoll_ctl(EPOLL_CTL_DEL, fd): removed from the poller */
};

enum pyebpf_handoff_via {
	PYEBPF_HANDOFF_VIA_UNKNOWN = 0,
	PYEBPF_HANDOFF_VIA_RECVFROM = 1,
	PYEBPF_HANDOFF_VIA_RECVMSG = 2,
	PYEBPF_HANDOFF_VIA_READ = 3, /* TLS servers: OpenSSL reads the socket with read() */
	PYEBPF_HANDOFF_VIA_READV = 4,
};

/* Value of the `queued` map, key (tgid << 32 | fd): who queued the fd and when. */
struct pyebpf_handoff_queued {
	__u64 ts_ns;
	__u64 thread_id; /* thread pointer of the queueing thread (names it in user space) */
	__u32 tid;
	__u32 ns_tid;
	__u8 path; /* enum pyebpf_handoff_path */
	__u8 pad[7];
	char comm[PYEBPF_COMM_LEN];
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_handoff_queued) == 48, "handoff queued layout");

/* One pickup at or above --handoff-min-ms. hdr is the worker; hdr.ts_ns is the queue time. */
struct pyebpf_handoff_event {
	struct pyebpf_event_header hdr;
	__u64 pickup_ns;
	struct pyebpf_handoff_queued main;
	__s32 fd;
	__u8 pickup_via; /* enum pyebpf_handoff_via */
	__u8 pad[3];
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_handoff_event) == 56 + 8 + 48 + 8, "handoff event layout");

/*
 * Handoff latency histogram in microseconds, log-linear: values 0-3 have a bucket
 * each, then every power of two [2^e, 2^(e+1)) is split in 4 equal buckets (at
 * most 25% wide, so a percentile read from it is within 12.5% of the truth).
 * The last bucket also holds everything from 2^32 us (71 min) up.
 */
#define PYEBPF_HANDOFF_BUCKETS 124

#ifdef __cplusplus
#define PYEBPF_HANDOFF_INLINE inline
#else
#define PYEBPF_HANDOFF_INLINE static __always_inline
#endif

/* Bucket of a handoff of `us` microseconds; shared so user space decodes what BPF counted. */
PYEBPF_HANDOFF_INLINE __u32 pyebpf_handoff_bucket(__u64 us)
{
	__u64 v = us;
	__u32 e = 0;

	if (us < 4)
		return (__u32)us;
	if (us >> 32)
		return PYEBPF_HANDOFF_BUCKETS - 1;
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

/* Value of the per-CPU `stats` map, key tgid. Cumulative: user space takes deltas. */
struct pyebpf_handoff_stats {
	__u64 queued;	   /* fds queued (an accepted fd later removed from the poller counts once) */
	__u64 picked;	   /* pickups by another thread, whatever their latency */
	__u64 cancelled;   /* queued fds closed before any read */
	__u64 same_thread; /* queued fds first read by the queueing thread: handled inline, no handoff */
	__u64 peer_closed; /* picked up with nothing to read but the peer's FIN: a connection ending, not a request */
	__u64 sum_ns;	   /* total handoff time of the pickups */
	__u64 hist[PYEBPF_HANDOFF_BUCKETS];
};

/* Counters beyond the common ones (bpf/common.h). */
enum pyebpf_handoff_counter {
	PYEBPF_HANDOFF_CNT_QUEUE_FULL = PYEBPF_CNT_TRACKER_BASE, /* queued map update failed */
	PYEBPF_HANDOFF_CNT_STATS_FULL,				 /* no stats slot for a pid */
};

#endif /* PYEBPF_HANDOFF_H */
