/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * TCP trackers (tcp_connect, tcp_accept, tcp_loss): one BPF object, tcp.bpf.c,
 * whose events share one ring buffer. Every record starts with `kind`.
 */
#ifndef PYEBPF_TCP_H
#define PYEBPF_TCP_H

#include "common.h"

#define PYEBPF_AF_INET	2
#define PYEBPF_AF_INET6 10

enum pyebpf_tcp_kind {
	PYEBPF_TCP_CONNECT = 1,
	PYEBPF_TCP_ACCEPT = 2,
	PYEBPF_TCP_LOSS = 3,
	PYEBPF_TCP_THREAD = 4, /* a target thread owns its first socket: read its name now */
};

/* tcp_loss event types (the `event` field). */
enum pyebpf_tcp_loss_type {
	PYEBPF_LOSS_RETRANSMIT = 0,    /* tcp:tcp_retransmit_skb */
	PYEBPF_LOSS_SYNACK_RETRANSMIT, /* tcp:tcp_retransmit_synack (listener side) */
	PYEBPF_LOSS_SEND_RST,	       /* tcp:tcp_send_reset */
	PYEBPF_LOSS_RECV_RST,	       /* tcp:tcp_receive_reset */
	PYEBPF_LOSS_ZERO_WINDOW,       /* a zero-window probe was sent (persist timer) */
	PYEBPF_LOSS_LOSS,	       /* tcp:tcp_cong_state_set -> TCP_CA_Loss (RTO) */
	PYEBPF_LOSS_RECOVERY,	       /* tcp:tcp_cong_state_set -> TCP_CA_Recovery (fast retransmit) */
	PYEBPF_LOSS_TYPES,
};

/*
 * One side's view of a connection. Addresses are network byte order; an
 * AF_INET address is in the first 4 bytes. Ports are host byte order.
 */
struct pyebpf_tcp_addrs {
	__u8 saddr[16]; /* local */
	__u8 daddr[16]; /* remote */
	__u16 sport;
	__u16 dport;
	__u16 family; /* PYEBPF_AF_INET or PYEBPF_AF_INET6 (v4-mapped stays INET6) */
	__u16 pad;
	__u32 netns; /* inode of the socket's network namespace */
	__u32 pad2;
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_addrs) == 48, "tcp addrs layout");

/* Who a socket belongs to: the thread that connected, accepted or listened. */
struct pyebpf_tcp_owner {
	struct pyebpf_event_header hdr; /* ts_ns: when the owner was recorded */
	__u64 connect_ns;		/* SYN_SENT time while a connect is in flight, else 0 */
	__u32 retrans_seen;		/* tp->total_retrans accounted for so far (tcp_loss) */
	__u16 probes_seen;		/* icsk_probes_out accounted for so far (tcp_loss) */
	__u8 backoff_seen;		/* icsk_backoff accounted for so far (tcp_loss) */
	__u8 zero_window;		/* a zero-window probe timer of the socket was seen */
	__u32 nondata_seen;		/* segments sent without data, so far (tcp_loss) */
	__u32 pad;
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_owner) == 80, "tcp owner layout");

/* A target thread recorded as a socket owner for the first time. Its events
 * may come after it exited (a timeout ends the thread that waited for it), so
 * user space reads its Python name while it is alive. */
struct pyebpf_tcp_thread_event {
	__u32 kind; /* PYEBPF_TCP_THREAD */
	__u32 pad;
	struct pyebpf_event_header hdr;
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_thread_event) == 64, "tcp thread event layout");

/* Outbound handshake finished: SYN_SENT -> ESTABLISHED or CLOSE. */
struct pyebpf_tcp_connect_event {
	__u32 kind;			/* PYEBPF_TCP_CONNECT */
	__u32 new_state;		/* TCP_ESTABLISHED or TCP_CLOSE */
	struct pyebpf_event_header hdr; /* the connecting thread; ts_ns = outcome time */
	struct pyebpf_tcp_addrs addrs;
	__u64 start_ns;	     /* SYN_SENT (the SYN is about to be sent) */
	__u32 srtt_us;	     /* smoothed RTT, success only */
	__u32 total_retrans; /* SYN retransmissions */
	__s32 sk_err;	     /* socket error at CLOSE (ECONNREFUSED, ETIMEDOUT, ...) */
	__u32 same_thread;   /* 1: outcome seen in the connecting thread's own context */
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_connect_event) == 136, "tcp connect event layout");

/* An inbound connection returned by accept()/accept4() in a traced process. */
struct pyebpf_tcp_accept_event {
	__u32 kind;			/* PYEBPF_TCP_ACCEPT */
	__u32 flags;			/* PYEBPF_ACCEPT_* */
	struct pyebpf_event_header hdr; /* the accepting thread; ts_ns = accept() return */
	struct pyebpf_tcp_addrs addrs;	/* saddr/sport local, daddr/dport peer */
	__u64 established_ns;		/* handshake completed (SYN_RECV -> ESTABLISHED) */
	__u32 handshake_rtt_us;		/* first SYN-ACK sent -> handshake-completing ACK received */
	__u32 synack_retrans;		/* SYN-ACKs retransmitted for this connection */
	__u32 syn_queue_len;		/* listener: request sockets (half-open connections) */
	__u32 accept_queue_len;		/* listener: connections still waiting for accept() */
	__u32 accept_queue_max;		/* listener: backlog limit */
	__u32 pad;
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_accept_event) == 144, "tcp accept event layout");

#define PYEBPF_ACCEPT_HAVE_ESTABLISHED (1u << 0) /* established_ns/handshake known */
#define PYEBPF_ACCEPT_HAVE_LISTENER    (1u << 1) /* queue lengths known */
#define PYEBPF_ACCEPT_HAVE_RTT	       (1u << 2) /* handshake_rtt_us measured */

/* Retransmits, resets, zero-window probes, loss and recovery episodes. */
struct pyebpf_tcp_loss_event {
	__u32 kind;			/* PYEBPF_TCP_LOSS */
	__u8 type;			/* enum pyebpf_tcp_loss_type */
	__u8 tcp_state;			/* TCP_ESTABLISHED ... TCP_NEW_SYN_RECV */
	__u8 flags;			/* PYEBPF_LOSS_* */
	__u8 ca_state;			/* 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss; loss/recovery: the new one */
	struct pyebpf_event_header hdr; /* the socket's owner (pid 0 if unknown); ts_ns = event time */
	struct pyebpf_tcp_addrs addrs;
	__u32 srtt_us;
	__u32 snd_cwnd;
	__u32 total_retrans;
	__u32 lost_out;
	__u32 snd_wnd;
	__u32 rcv_wnd;
	__u32 packets_out;
	__u32 retrans_out;
	__u32 detail; /* per type: segments, RST reason, probes sent, previous ca_state, SYN-ACK attempt */
	__u32 pad;
};
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_tcp_loss_event) == 152, "tcp loss event layout");

#define PYEBPF_LOSS_OWNER_KNOWN (1u << 0) /* hdr is the owner's */
#define PYEBPF_LOSS_FULL_SOCK	(1u << 1) /* congestion fields are valid */
#define PYEBPF_LOSS_HAVE_DETAIL (1u << 2) /* detail is valid */

/* Counters beyond the common ones (see enum pyebpf_counter). */
enum pyebpf_tcp_counter {
	PYEBPF_TCP_CNT_LOST_CONNECT = PYEBPF_CNT_TRACKER_BASE, /* ring buffer full */
	PYEBPF_TCP_CNT_LOST_ACCEPT,
	PYEBPF_TCP_CNT_LOST_LOSS,
	PYEBPF_TCP_CNT_OWNERS_FULL,	    /* socket->owner map full: socket not attributed */
	PYEBPF_TCP_CNT_ACCEPT_UNRESOLVED,   /* accept()ed fd could not be resolved to a TCP socket */
	PYEBPF_TCP_CNT_ACCEPT_NO_HANDSHAKE, /* handshake completed before tracing started */
	PYEBPF_TCP_CNT_LOSS_FILTERED,	    /* --loss-filter-ip did not match */
	PYEBPF_TCP_CNT_RETRANS_FAILED,	    /* retransmitted segments the kernel counted but could not send */
	PYEBPF_TCP_CNT_RETRANS_UNSEEN,	    /* segments in tp->total_retrans whose tracepoint no hook run saw */
	PYEBPF_TCP_CNT_PROBES_UNSEEN,	    /* zero-window probes in icsk_probes_out no timer hook saw sent */
	PYEBPF_TCP_CNT_PROBES_DEFERRED,	    /* probe timer runs left to release_sock(): a probe each at most */
	PYEBPF_TCP_CNT_SEEDED,		    /* sockets predating tracing attributed by the iterator */
	PYEBPF_TCP_CNT_SUPPRESSED,	    /* first of PYEBPF_LOSS_TYPES slots: rate-limited per type */
	PYEBPF_TCP_CNT_END = PYEBPF_TCP_CNT_SUPPRESSED + (int)PYEBPF_LOSS_TYPES,
};
PYEBPF_STATIC_ASSERT((int)PYEBPF_TCP_CNT_END <= (int)PYEBPF_CNT_MAX, "tcp counters fit the counters map");

#endif /* PYEBPF_TCP_H */
