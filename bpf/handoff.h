/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * handoff tracker: how long a server's connection waits between the thread that
 * queues it (accept4, or epoll_ctl DEL out of the poller) and the first read of
 * it by another thread of the same process (the worker picking the request up).
 */
#ifndef PYEBPF_HANDOFF_H
#define PYEBPF_HANDOFF_H

#include "common.h"
#include "histogram.h"

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

/* Value of the per-CPU `stats` map, key tgid. Cumulative: user space takes deltas. */
struct pyebpf_handoff_stats {
	__u64 queued;	   /* fds queued (an accepted fd later removed from the poller counts once) */
	__u64 picked;	   /* pickups by another thread, whatever their latency */
	__u64 cancelled;   /* queued fds closed before any read */
	__u64 same_thread; /* queued fds first read by the queueing thread: handled inline, no handoff */
	__u64 peer_closed; /* picked up with nothing to read but the peer's FIN: a connection ending, not a request */
	__u64 sum_ns;	   /* total handoff time of the pickups */
	__u64 hist[PYEBPF_LATENCY_BUCKETS];
};

/* Counters beyond the common ones (bpf/common.h). */
enum pyebpf_handoff_counter {
	PYEBPF_HANDOFF_CNT_QUEUE_FULL = PYEBPF_CNT_TRACKER_BASE, /* queued map update failed */
	PYEBPF_HANDOFF_CNT_STATS_FULL,				 /* no stats slot for a pid */
};

#endif /* PYEBPF_HANDOFF_H */
