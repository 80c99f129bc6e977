// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * tcp_connect, tcp_accept and tcp_loss: one object, so a socket's owner is
 * recorded once whichever of the three run. Tracepoints (tp_btf) and uprobes,
 * no kprobes: this must run where CONFIG_KPROBES is off and fentry is refused.
 *
 * Attribution. State changes, retransmits and resets mostly run in softirq or
 * timer context, where `current` is whoever was interrupted. So a socket is
 * attributed to a thread when that thread is known to own it, in its own
 * context: connect() (CLOSE -> SYN_SENT), listen() (CLOSE -> LISTEN) and the
 * return of accept()/accept4() (tcp_accept only); a connection the
 * kernel accepted gets its listener's owner when its handshake completes. The
 * owners map (socket -> thread) keeps that until tcp_destroy_sock; every later
 * event of the socket reports that thread. By default only sockets of target processes get an owner and
 * only owned sockets are reported; targ_host_scope widens both to the host.
 *
 * Hooks (user space disables the optional ones the kernel lacks):
 *   inet_sock_set_state      connect start/outcome, listen, handshake complete
 *   uprobe accept4/accept    accept() return in target processes (acceptor, dwell,
 *     + uretprobe            queues; tcp_accept only), attached per target
 *   sys_exit                 the same for every process (tcp_accept with --net-scope host only)
 *   tcp_retransmit_synack    SYN-ACK retransmits (handshake duration, loss event)
 *   tcp_destroy_sock         forget the socket
 *   tcp_retransmit_skb, tcp_send_reset, tcp_receive_reset, tcp_cong_state_set,
 *   timer_expire_entry/exit  (tcp_loss only)
 *   iter/tcp                 once at start: owners of the targets' existing sockets
 */
#include "python.bpf.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_tracing.h>
#include "ringbuf.bpf.h"
#include "syscalls.bpf.h"
#include "tcp.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define RB_BATCH_BYTES	     (32 * 1024)
#define RB_MIN_WAKEUP_GAP_NS (10 * 1000 * 1000)
#define ICSK_TIME_PROBE0     3
#define TS_COMPAT	     0x0002
#define EEXIST		     17
#define EBUSY		     16
#define ECONNRESET	     104

/* Set by user space before load. */
const volatile bool targ_host_scope = false;  /* every socket on the host, not only targets' */
const volatile bool targ_connect = false;     /* emit tcp_connect events */
const volatile bool targ_accept = false;      /* emit tcp_accept events */
const volatile bool targ_loss = false;	      /* emit tcp_loss events */
const volatile bool targ_retrans_err = false; /* tcp_retransmit_skb has its `err` argument */
const volatile bool targ_rst_reason = false;  /* tcp_send_reset has its `reason` argument */
const volatile __u32 targ_loss_rate = 0;      /* tcp_loss events per second, 0: unlimited */
const volatile bool filter_ip_set = false;    /* --loss-filter-ip */
const volatile __u64 filter_ip[2] = {};	      /* as an IPv6 address (IPv4 v4-mapped), as stored */

/*
 * tcp_write_timer's address: the function of every TCP socket's retransmit
 * timer (tcp_init_xmit_timers), read from the first TCP socket a hook sees.
 * Learning it here spares user space a scan of /proc/kallsyms (~0.1 s at
 * start) and works where kptr_restrict hides kernel addresses.
 */
volatile __u64 tcp_write_timer = 0;

/* 3,200 records of at most 160 bytes: 0.16 s of 20,000 connections/s while
 * the reader, woken every RB_BATCH_BYTES, is kept off the CPU. Its pages are
 * resident from the start and mapped twice: 1 MB of pyebpf's RSS. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
} events SEC(".maps");

/* Records go out as untyped ring buffer bytes; these keep every record type in
 * the object's BTF, where the layout test compares it with the C++ view. */
struct pyebpf_tcp_connect_event *const volatile connect_btf_anchor = 0;
struct pyebpf_tcp_accept_event *const volatile accept_btf_anchor = 0;
struct pyebpf_tcp_loss_event *const volatile loss_btf_anchor = 0;
struct pyebpf_tcp_thread_event *const volatile thread_btf_anchor = 0;

static __always_inline void tcp_submit(void *record)
{
	pyebpf_count(PYEBPF_CNT_EVENTS);
	bpf_ringbuf_submit(record, pyebpf_rb_wakeup_flags(&events, RB_BATCH_BYTES, RB_MIN_WAKEUP_GAP_NS));
}

/* Socket -> owning thread. Sized by user space (host scope needs more).
 * Not preallocated, like seed_inodes and listeners: a preallocated hash fills
 * its free lists when created, 20-40 ms of pyebpf's start-up for 65,536
 * entries, and holds all that kernel memory from then on. Entries are made in
 * process and softirq context (no perf_event program uses these maps), where
 * run-time allocation is allowed on every kernel pyebpf supports. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct pyebpf_tcp_owner);
} owners SEC(".maps");

/* Sockets the targets held before tracing: inode -> owner (tid 0: thread
 * unknown), filled by user space and matched by the seed_owners iterator. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* see owners */
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct pyebpf_tcp_owner);
} seed_inodes SEC(".maps");

/*
 * Listening sockets with an owner, by (netns, local address, port): a
 * connection accepted from one gets the listener's owner when its handshake
 * completes, before accept() (tcp_loss events while it waits in the queue) and
 * without the accept() hook (which only tcp_accept loads: it costs every
 * system call on the machine). accept() then names the accepting thread.
 */
struct listen_key {
	__u8 addr[16]; /* as IPv6, IPv4 v4-mapped; :: and ::ffff:0.0.0.0 are wildcards */
	__u32 netns;
	__u16 port;
	__u16 pad;
};

struct listening {
	struct pyebpf_tcp_owner owner;
	__u64 sk;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* see owners */
	__uint(max_entries, 16384);
	__type(key, struct listen_key);
	__type(value, struct listening);
} listeners SEC(".maps");

/* Target threads announced to user space (tid -> thread pointer). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} announced SEC(".maps");

/* Inbound connections between handshake completion and accept(). Host-wide:
 * the listener of a child socket is not known until accept(). */
struct established {
	__u64 ts_ns;
	__u32 handshake_rtt_us;
	__u16 synack_retrans;
	__u16 have_rtt;
	__u16 sport;
	__u16 dport;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct established);
} established SEC(".maps");

/* First SYN-ACK send time (us) of handshakes whose SYN-ACK was retransmitted. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pyebpf_tcp_addrs);
	__type(value, __u64);
} synack_first SEC(".maps");

/* The tcp_write_timer run in progress on this CPU, between entry and exit. */
struct probe_timer {
	__u64 timer;
	__u64 sk;
	__u32 probes_out;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_timer);
} probe_timers SEC(".maps");

/* tcp_loss rate limit: events emitted in the current second, all CPUs. */
struct loss_window {
	__u64 second;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct loss_window);
} loss_windows SEC(".maps");

static __always_inline bool tcp_sock_is_tcp(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family != PYEBPF_AF_INET && family != PYEBPF_AF_INET6)
		return false;
	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

/* `sk` is a full TCP socket (tcp_sock_is_tcp). */
static __always_inline void tcp_learn_write_timer(const struct sock *sk)
{
	if (targ_loss && !tcp_write_timer)
		tcp_write_timer =
			(__u64)BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_retransmit_timer.function);
}

/* Full sockets only have tcp_sock fields; TIME_WAIT and NEW_SYN_RECV are mini sockets. */
static __always_inline bool tcp_is_full_sock(const struct sock *sk)
{
	__u8 state = BPF_CORE_READ(sk, __sk_common.skc_state);

	return state != TCP_TIME_WAIT && state != TCP_NEW_SYN_RECV;
}

static __always_inline void tcp_set_v4mapped(__u8 *addr, __u32 v4)
{
	__builtin_memset(addr, 0, 10);
	addr[10] = 0xff;
	addr[11] = 0xff;
	__builtin_memcpy(addr + 12, &v4, 4);
}

static __always_inline bool tcp_is_v4mapped(const __u8 *addr)
{
	__u64 lo;
	__u32 mid;

	__builtin_memcpy(&lo, addr, 8);
	__builtin_memcpy(&mid, addr + 8, 4);
	return lo == 0 && mid == bpf_htonl(0x0000ffff);
}

/*
 * Addresses from the sock_common part, so it also works for request sockets
 * and mini sockets. An AF_INET6 socket talking to a v4-mapped peer keeps its
 * family; its addresses are rebuilt from the IPv4 fields, which the kernel
 * keeps authoritative for such sockets.
 */
static __always_inline void tcp_fill_addrs(const struct sock *sk, struct pyebpf_tcp_addrs *a)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	__builtin_memset(a, 0, sizeof(*a));
	a->family = family;
	/* skc_num is cleared when a closing socket releases its port, before the
	 * CLOSE state change is traced; inet_sport keeps it (full sockets only). */
	if (tcp_is_full_sock(sk))
		a->sport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	else
		a->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	a->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	a->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	if (family == PYEBPF_AF_INET) {
		__u32 saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(a->saddr, &saddr, 4);
		__builtin_memcpy(a->daddr, &daddr, 4);
	} else if (family == PYEBPF_AF_INET6) {
		BPF_CORE_READ_INTO(&a->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&a->daddr, sk, __sk_common.skc_v6_daddr);
		if (tcp_is_v4mapped(a->daddr)) {
			tcp_set_v4mapped(a->saddr, BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr));
			tcp_set_v4mapped(a->daddr, BPF_CORE_READ(sk, __sk_common.skc_daddr));
		}
	}
}

/* Family-independent key for a connection: IPv4 as v4-mapped IPv6. */
static __always_inline void tcp_normalize(struct pyebpf_tcp_addrs *a)
{
	if (a->family == PYEBPF_AF_INET) {
		__u32 s, d;

		__builtin_memcpy(&s, a->saddr, 4);
		__builtin_memcpy(&d, a->daddr, 4);
		tcp_set_v4mapped(a->saddr, s);
		tcp_set_v4mapped(a->daddr, d);
	}
	a->family = PYEBPF_AF_INET6;
}

static __always_inline bool tcp_trace_current(__u32 tgid)
{
	return targ_host_scope || pyebpf_lookup_proc(tgid);
}

static __always_inline void tcp_announce_thread(const struct pyebpf_event_header *hdr)
{
	struct pyebpf_tcp_thread_event *ev;
	__u32 tid = hdr->tid;
	__u64 *known = bpf_map_lookup_elem(&announced, &tid);

	if ((known && *known == hdr->thread_id) || !pyebpf_lookup_proc(hdr->pid))
		return;
	bpf_map_update_elem(&announced, &tid, &hdr->thread_id, BPF_ANY);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev)
		return;
	ev->kind = PYEBPF_TCP_THREAD;
	ev->pad = 0;
	ev->hdr = *hdr;
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP); /* once per thread */
}

/* Retransmitted segments the kernel counted on sk (a full socket) so far. */
static __always_inline __u32 tcp_total_retrans(const struct sock *sk)
{
	return tcp_is_full_sock(sk) ? BPF_CORE_READ((struct tcp_sock *)sk, total_retrans) : 0;
}

/* How much the counter grew since `seen`: tcp_disconnect() zeroes it. */
static __always_inline __u32 tcp_retrans_grown(__u32 now, __u32 seen)
{
	return now >= seen ? now - seen : now;
}

/* Segments sk sent without data: ACKs, zero-window probes, FIN, RST. */
static __always_inline __u32 tcp_nondata_segs(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;

	return BPF_CORE_READ(tp, segs_out) - BPF_CORE_READ(tp, data_segs_out);
}

/* What owner's accounting of its socket's probing has reached: the three
 * counters tcp_account_probes compares, set together. */
static __always_inline void tcp_probes_seen(struct pyebpf_tcp_owner *owner, __u8 probes, __u8 backoff, __u32 nondata)
{
	owner->probes_seen = probes;
	owner->backoff_seen = backoff;
	owner->nondata_seen = nondata;
}

/* Zero-window probes the socket counted past what the hooks saw were sent
 * where no hook ran. Each probe raises icsk_probes_out and icsk_backoff; the
 * peer's ACK zeroes the first (on loopback before any later hook reads it),
 * the backoff stays until the window opens or an RTT is measured (an ACK of
 * new data, with timestamps: before probing starts). So: the larger growth of
 * the two. A count below what was seen: the window opened since. */
static __always_inline void tcp_account_probes(const struct sock *sk, struct pyebpf_tcp_owner *owner)
{
	__u8 probes = BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_probes_out);
	__u8 backoff = BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_backoff);
	__u32 unseen = probes > owner->probes_seen ? probes - owner->probes_seen : 0;

	if (backoff > owner->backoff_seen && backoff - owner->backoff_seen > unseen)
		unseen = backoff - owner->backoff_seen;
	if (unseen)
		pyebpf_count_add(PYEBPF_TCP_CNT_PROBES_UNSEEN, unseen);
	tcp_probes_seen(owner, probes, backoff, tcp_nondata_segs(sk));
}

/* Probing ends with sk (owner may be NULL): what the hooks missed, while the
 * counters still hold it. Only once probing: keepalive probes count in
 * icsk_probes_out too. A reset purges the write queue, zeroing the backoff,
 * so the reset hooks account before it. */
static __always_inline void tcp_probing_ends(const struct sock *sk, struct pyebpf_tcp_owner *owner)
{
	if (owner && owner->zero_window) {
		tcp_account_probes(sk, owner);
		owner->zero_window = 0;
	}
}

/* Where owner's accounting of sk starts: retransmits and probes it counted
 * before are not ours to report. */
static __always_inline void tcp_owner_baseline(const struct sock *sk, struct pyebpf_tcp_owner *owner)
{
	owner->retrans_seen = tcp_total_retrans(sk);
	tcp_probes_seen(owner, BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_probes_out),
			BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_backoff),
			tcp_is_full_sock(sk) ? tcp_nondata_segs(sk) : 0);
}

/* Records owner for sk, its accounting starting now. */
static __always_inline void tcp_store_owner(const struct sock *sk, struct pyebpf_tcp_owner *owner, __u64 flags)
{
	__u64 key = (__u64)sk;
	long err;

	tcp_owner_baseline(sk, owner);
	err = bpf_map_update_elem(&owners, &key, owner, flags);

	if (err && err != -EEXIST)
		pyebpf_count(PYEBPF_TCP_CNT_OWNERS_FULL);
}

/* The current thread owns sk from now on; `owner` receives the record. */
static __always_inline void tcp_set_owner(const struct sock *sk, __u64 connect_ns, __u64 flags,
					  struct pyebpf_tcp_owner *owner)
{
	struct task_struct *task = bpf_get_current_task_btf();

	__builtin_memset(owner, 0, sizeof(*owner));
	pyebpf_fill_header(&owner->hdr, task, bpf_ktime_get_ns());
	tcp_announce_thread(&owner->hdr);
	owner->connect_ns = connect_ns;
	tcp_store_owner(sk, owner, flags);
}

static __always_inline void tcp_listen_key(const struct sock *sk, struct listen_key *k)
{
	struct pyebpf_tcp_addrs a;

	tcp_fill_addrs(sk, &a);
	tcp_normalize(&a);
	__builtin_memcpy(k->addr, a.saddr, 16);
	k->netns = a.netns;
	k->port = a.sport;
	k->pad = 0;
}

static __always_inline void tcp_remember_listener(const struct sock *sk, const struct pyebpf_tcp_owner *owner,
						  __u64 flags)
{
	struct listening l = {.owner = *owner, .sk = (__u64)sk};
	struct listen_key k;

	tcp_listen_key(sk, &k);
	bpf_map_update_elem(&listeners, &k, &l, flags);
}

static __always_inline void tcp_forget_listener(const struct sock *sk)
{
	struct listen_key k;
	struct listening *l;

	tcp_listen_key(sk, &k);
	l = bpf_map_lookup_elem(&listeners, &k);
	if (l && l->sk == (__u64)sk) /* not another listener of a SO_REUSEPORT group */
		bpf_map_delete_elem(&listeners, &k);
}

/* A connection just accepted by the kernel belongs to its listener's owner. */
static __always_inline void tcp_child_owner(const struct sock *child)
{
	struct pyebpf_tcp_owner owner;
	struct listen_key k;
	struct listening *l;

	tcp_listen_key(child, &k);
	l = bpf_map_lookup_elem(&listeners, &k);
	if (!l && tcp_is_v4mapped(k.addr)) {
		__builtin_memset(k.addr + 12, 0, 4); /* 0.0.0.0 */
		l = bpf_map_lookup_elem(&listeners, &k);
	}
	if (!l) {
		__builtin_memset(k.addr, 0, 16); /* :: (also accepts IPv4) */
		l = bpf_map_lookup_elem(&listeners, &k);
	}
	if (!l)
		return;
	owner = l->owner;
	owner.hdr.ts_ns = bpf_ktime_get_ns();
	owner.connect_ns = 0;
	tcp_store_owner(child, &owner, BPF_NOEXIST);
}

/* ------------------------------------------------------------------------ */
/* Connect, listen, handshake completion                                     */

static __always_inline void tcp_connect_done(const struct sock *sk, int newstate, struct pyebpf_tcp_owner *owner)
{
	struct pyebpf_tcp_connect_event *ev;
	__u64 now = bpf_ktime_get_ns();
	__u64 start = owner->connect_ns;

	owner->connect_ns = 0;
	if (!targ_connect)
		return;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		pyebpf_count(PYEBPF_TCP_CNT_LOST_CONNECT);
		return;
	}
	ev->kind = PYEBPF_TCP_CONNECT;
	ev->new_state = newstate;
	ev->hdr = owner->hdr;
	ev->hdr.ts_ns = now;
	tcp_fill_addrs(sk, &ev->addrs);
	ev->start_ns = start;
	ev->srtt_us = newstate == TCP_ESTABLISHED ? BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3 : 0;
	ev->total_retrans = BPF_CORE_READ((struct tcp_sock *)sk, total_retrans);
	ev->sk_err = BPF_CORE_READ(sk, sk_err);
	ev->same_thread = (__u32)bpf_get_current_pid_tgid() == owner->hdr.tid;
	tcp_submit(ev);
}

/* Child socket SYN_RECV -> ESTABLISHED: the handshake is complete and the
 * connection waits in the listener's accept queue from now on. */
static __always_inline void tcp_child_established(const struct sock *sk)
{
	struct established est = {};
	struct pyebpf_tcp_addrs key;
	__u64 now = bpf_ktime_get_ns();
	__u64 skey = (__u64)sk;
	__u64 *first_us;

	est.ts_ns = now;
	est.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	est.dport = BPF_CORE_READ(sk, __sk_common.skc_dport);
	est.synack_retrans = BPF_CORE_READ((struct tcp_sock *)sk, total_retrans);
	tcp_fill_addrs(sk, &key);
	tcp_normalize(&key);
	first_us = bpf_map_lookup_elem(&synack_first, &key);
	if (first_us) {
		/* SYN-ACK retransmitted: no RTT sample (Karn); time it from the first SYN-ACK. */
		__u64 now_us = now / 1000;

		if (now_us > *first_us) {
			est.handshake_rtt_us = now_us - *first_us;
			est.have_rtt = 1;
		}
		bpf_map_delete_elem(&synack_first, &key);
	} else {
		/* tcp_check_req() fed the child exactly one RTT sample, first SYN-ACK
		 * sent -> this ACK received, before this transition. */
		__u32 srtt = BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3;

		if (srtt) {
			est.handshake_rtt_us = srtt;
			est.have_rtt = 1;
		}
	}
	bpf_map_update_elem(&established, &skey, &est, BPF_ANY);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state_change, const struct sock *sk, const int oldstate, const int newstate)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct pyebpf_tcp_owner *owner, mine;
	__u64 key = (__u64)sk;

	if (!tcp_sock_is_tcp(sk))
		return 0;
	tcp_learn_write_timer(sk);
	if (newstate == TCP_SYN_SENT) {
		/* connect(): process context of the connecting thread. */
		if (tcp_trace_current(pid_tgid >> 32))
			tcp_set_owner(sk, bpf_ktime_get_ns(), BPF_ANY, &mine);
		return 0;
	}
	if (newstate == TCP_LISTEN) {
		if (tcp_trace_current(pid_tgid >> 32)) {
			tcp_set_owner(sk, 0, BPF_ANY, &mine);
			tcp_remember_listener(sk, &mine, BPF_ANY);
		}
		return 0;
	}
	if (oldstate == TCP_LISTEN) {
		tcp_forget_listener(sk);
		return 0;
	}
	if (newstate == TCP_ESTABLISHED && oldstate == TCP_SYN_RECV) {
		if (targ_accept)
			tcp_child_established(sk);
		if (targ_loss)
			tcp_child_owner(sk);
	}
	if (newstate != TCP_ESTABLISHED && newstate != TCP_CLOSE)
		return 0;
	/* SYN_SENT -> ESTABLISHED / CLOSE; also SYN_SENT -> SYN_RECV -> ESTABLISHED
	 * (simultaneous open), which is why the pending connect lives in the owner. */
	owner = bpf_map_lookup_elem(&owners, &key);
	if (owner && owner->connect_ns)
		tcp_connect_done(sk, newstate, owner);
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tcp_destroy, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct pyebpf_tcp_owner *owner;

	owner = targ_loss ? bpf_map_lookup_elem(&owners, &key) : NULL;
	if (owner) { /* what grew after the last run of a hook */
		pyebpf_count_add(PYEBPF_TCP_CNT_RETRANS_UNSEEN,
				 tcp_retrans_grown(tcp_total_retrans(sk), owner->retrans_seen));
		/* Still probing as far as the hooks know, and reset: the kernel ran
		 * no hook for the reset either (as for the timers), whose purge
		 * zeroed the backoff. What the socket sent since the last look
		 * without data was the probes the hooks missed. */
		if (owner->zero_window && BPF_CORE_READ(sk, sk_err) == ECONNRESET)
			pyebpf_count_add(PYEBPF_TCP_CNT_PROBES_UNSEEN, tcp_nondata_segs(sk) - owner->nondata_seen);
		tcp_probing_ends(sk, owner);
	}
	bpf_map_delete_elem(&owners, &key);
	bpf_map_delete_elem(&established, &key);
	return 0;
}

/* Runs over every TCP socket of one network namespace when user space reads
 * the iterator (once per namespace at start). Mini sockets (request,
 * TIME_WAIT) have no file and are skipped. */
SEC("iter/tcp")
int seed_owners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct pyebpf_tcp_owner *seed, owner;
	struct tcp_sock *tp;
	__u64 ino, key;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	tcp_learn_write_timer((const struct sock *)tp);
	ino = BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.sk_socket, file, f_inode, i_ino);
	seed = ino ? bpf_map_lookup_elem(&seed_inodes, &ino) : NULL;
	if (!seed)
		return 0;
	owner = *seed;
	tcp_owner_baseline((const struct sock *)tp, &owner);
	key = (__u64)tp;
	/* An owner recorded since tracing started is more precise: keep it. */
	if (!bpf_map_update_elem(&owners, &key, &owner, BPF_NOEXIST))
		pyebpf_count(PYEBPF_TCP_CNT_SEEDED);
	if (skc->skc_state == TCP_LISTEN)
		tcp_remember_listener((const struct sock *)tp, &owner, BPF_NOEXIST);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* accept()                                                                  */

/* The TCP socket behind file descriptor `fd` of the current task, or NULL. */
static __always_inline struct sock *tcp_sock_of_fd(struct task_struct *task, long fd)
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *file = NULL;
	struct socket *sock;
	struct sock *sk;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return NULL;
	sock = BPF_CORE_READ(file, private_data);
	/* A socket file's private_data is its struct socket, which points back. */
	if (!sock || BPF_CORE_READ(sock, file) != file)
		return NULL;
	sk = BPF_CORE_READ(sock, sk);
	if (!sk || !tcp_sock_is_tcp(sk))
		return NULL;
	return sk;
}

static __always_inline void tcp_fill_queues(struct sock *listener, struct pyebpf_tcp_accept_event *ev)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)listener;

	ev->syn_queue_len = BPF_CORE_READ(icsk, icsk_accept_queue.qlen.counter);
	ev->accept_queue_len = BPF_CORE_READ(listener, sk_ack_backlog);
	ev->accept_queue_max = BPF_CORE_READ(listener, sk_max_ack_backlog);
	ev->flags |= PYEBPF_ACCEPT_HAVE_LISTENER;
}

/* accept()/accept4() of `task` returned `fd`, taken from `listener_fd`. */
static __always_inline void tcp_accepted(struct task_struct *task, long fd, long listener_fd)
{
	struct pyebpf_tcp_accept_event *ev;
	struct pyebpf_tcp_owner mine;
	struct established *est;
	struct sock *sk, *listener;
	__u64 now, key;

	sk = tcp_sock_of_fd(task, fd);
	if (!sk) {
		pyebpf_count(PYEBPF_TCP_CNT_ACCEPT_UNRESOLVED); /* also non-TCP accepts (unix sockets) */
		return;
	}
	listener = tcp_sock_of_fd(task, listener_fd);
	key = (__u64)sk;
	/* The accepted socket is the owner's from now on (unless already closed:
	 * it would never see tcp_destroy_sock clear the entry). */
	if (BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_CLOSE)
		tcp_set_owner(sk, 0, BPF_ANY, &mine);
	if (listener && BPF_CORE_READ(listener, __sk_common.skc_state) == TCP_LISTEN) {
		/* The listener's latest acceptor owns it (and the connections it queues). */
		tcp_set_owner(listener, 0, BPF_ANY, &mine);
		tcp_remember_listener(listener, &mine, BPF_ANY);
	}
	est = bpf_map_lookup_elem(&established, &key);
	if (!targ_accept) {
		if (est)
			bpf_map_delete_elem(&established, &key);
		return;
	}
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		pyebpf_count(PYEBPF_TCP_CNT_LOST_ACCEPT);
		if (est)
			bpf_map_delete_elem(&established, &key);
		return;
	}
	now = bpf_ktime_get_ns();
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = PYEBPF_TCP_ACCEPT;
	pyebpf_fill_header(&ev->hdr, task, now);
	tcp_fill_addrs(sk, &ev->addrs);
	if (est && est->sport == BPF_CORE_READ(sk, __sk_common.skc_num) &&
	    est->dport == BPF_CORE_READ(sk, __sk_common.skc_dport) && est->ts_ns <= now) {
		ev->established_ns = est->ts_ns;
		ev->handshake_rtt_us = est->handshake_rtt_us;
		ev->synack_retrans = est->synack_retrans;
		ev->flags |= PYEBPF_ACCEPT_HAVE_ESTABLISHED;
		if (est->have_rtt)
			ev->flags |= PYEBPF_ACCEPT_HAVE_RTT;
	} else {
		pyebpf_count(PYEBPF_TCP_CNT_ACCEPT_NO_HANDSHAKE);
	}
	if (est)
		bpf_map_delete_elem(&established, &key);
	if (listener)
		tcp_fill_queues(listener, ev);
	tcp_submit(ev);
}

/*
 * Targets' accepts: uprobes on the C library's accept4/accept in each target
 * process (pid-scoped: other processes are not patched and pay nothing). The
 * entry keeps the listening fd for the return, per thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __s32);
} accepting SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(tcp_accept_enter, int listener_fd)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;

	/* Kept though the probe is per process: exact should another process's call get through. */
	if (pyebpf_lookup_proc(pid_tgid >> 32))
		bpf_map_update_elem(&accepting, &tid, &listener_fd, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(tcp_accept_return, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__s32 *listener_fd = bpf_map_lookup_elem(&accepting, &tid);
	__s32 fd;

	if (!listener_fd)
		return 0;
	fd = *listener_fd;
	bpf_map_delete_elem(&accepting, &tid);
	if (ret >= 0)
		tcp_accepted(bpf_get_current_task_btf(), ret, fd);
	return 0;
}

/*
 * --net-scope host: every process's accepts, which only a system call hook
 * sees. A program on sys_exit makes every system call on the host take the
 * kernel's syscall-tracing path, so it is loaded for that scope alone.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(tcp_accept_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	long nr = SYSCALL_NR(regs);

	/* Runs for every system call on the host: the cheap tests come first. */
	if ((nr != NR_accept && nr != NR_accept4) || ret < 0)
		return 0;
	if (!tcp_trace_current(bpf_get_current_pid_tgid() >> 32))
		return 0;
	if (bpf_core_field_exists(task->thread_info.status) && (BPF_CORE_READ(task, thread_info.status) & TS_COMPAT))
		return 0; /* 32-bit system call numbers differ */
	tcp_accepted(task, ret, SYSCALL_ARG0_CORE(regs));
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Loss                                                                      */

static __always_inline bool tcp_is_filter_ip(const __u8 *a)
{
	__u64 a0, a1;

	__builtin_memcpy(&a0, a, 8);
	__builtin_memcpy(&a1, a + 8, 8);
	return a0 == filter_ip[0] && a1 == filter_ip[1];
}

static __always_inline bool tcp_loss_filtered(const struct pyebpf_tcp_addrs *a)
{
	struct pyebpf_tcp_addrs n = *a;

	if (!filter_ip_set)
		return false;
	tcp_normalize(&n);
	return !tcp_is_filter_ip(n.saddr) && !tcp_is_filter_ip(n.daddr);
}

/* True if this event fits the per-second budget shared by all CPUs. */
static __always_inline bool tcp_loss_admit(__u8 type, __u64 now)
{
	struct loss_window *w;
	__u32 zero = 0;
	__u64 second = now / 1000000000ULL;

	if (!targ_loss_rate)
		return true;
	w = bpf_map_lookup_elem(&loss_windows, &zero);
	if (!w)
		return true;
	if (w->second != second) {
		/* Two CPUs may both reset at a boundary: a few extra events, never fewer. */
		w->second = second;
		w->count = 0;
	}
	if (__sync_fetch_and_add(&w->count, 1) < targ_loss_rate)
		return true;
	if (type < PYEBPF_LOSS_TYPES)
		pyebpf_count(PYEBPF_TCP_CNT_SUPPRESSED + type);
	return false;
}

/*
 * One tcp_loss event about `sk` (a full socket, a mini socket or NULL) whose
 * owner record is `owner` (NULL: none). `a` holds the addresses when the
 * caller took them elsewhere (an skb, a request socket), else NULL to take
 * them from sk.
 */
static __always_inline void tcp_emit_loss_owned(const struct sock *sk, const struct pyebpf_tcp_owner *owner, __u8 type,
						const struct pyebpf_tcp_addrs *a, __u32 detail, bool have_detail,
						int new_ca_state)
{
	struct pyebpf_tcp_loss_event *ev;
	struct pyebpf_tcp_addrs addrs;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 now;

	if (!owner && !targ_host_scope)
		return;
	if (a)
		addrs = *a;
	else if (sk)
		tcp_fill_addrs(sk, &addrs);
	else
		return;
	if (tcp_loss_filtered(&addrs)) {
		pyebpf_count(PYEBPF_TCP_CNT_LOSS_FILTERED);
		return;
	}
	now = bpf_ktime_get_ns();
	if (!tcp_loss_admit(type, now))
		return;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		pyebpf_count(PYEBPF_TCP_CNT_LOST_LOSS);
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = PYEBPF_TCP_LOSS;
	ev->type = type;
	if (owner) {
		ev->hdr = owner->hdr;
		ev->flags |= PYEBPF_LOSS_OWNER_KNOWN;
	}
	ev->hdr.ts_ns = now;
	ev->hdr.cpu = bpf_get_smp_processor_id();
	ev->addrs = addrs;
	if (sk) {
		ev->tcp_state = BPF_CORE_READ(sk, __sk_common.skc_state);
		if (tcp_is_full_sock(sk)) {
			ev->flags |= PYEBPF_LOSS_FULL_SOCK;
			/* The state being entered for loss/recovery, else the current one. */
			ev->ca_state = new_ca_state >= 0 ? new_ca_state
							 : BPF_CORE_READ_BITFIELD_PROBED(
								   (struct inet_connection_sock *)sk, icsk_ca_state);
			ev->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
			ev->snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
			ev->total_retrans = BPF_CORE_READ(tp, total_retrans);
			ev->lost_out = BPF_CORE_READ(tp, lost_out);
			ev->snd_wnd = BPF_CORE_READ(tp, snd_wnd);
			ev->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
			ev->packets_out = BPF_CORE_READ(tp, packets_out);
			ev->retrans_out = BPF_CORE_READ(tp, retrans_out);
		}
	}
	if (have_detail) {
		ev->detail = detail;
		ev->flags |= PYEBPF_LOSS_HAVE_DETAIL;
	}
	tcp_submit(ev);
}

/* As tcp_emit_loss_owned, with the owner recorded for owner_sk (may be NULL). */
static __always_inline void tcp_emit_loss(const struct sock *sk, const struct sock *owner_sk, __u8 type,
					  const struct pyebpf_tcp_addrs *a, __u32 detail, bool have_detail,
					  int new_ca_state)
{
	__u64 key = (__u64)owner_sk;

	tcp_emit_loss_owned(sk, owner_sk ? bpf_map_lookup_elem(&owners, &key) : NULL, type, a, detail, have_detail,
			    new_ca_state);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	/* Segments in this skb: what tp->total_retrans grows by when it is counted. */
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)skb->cb;
	__u16 segs = BPF_CORE_READ(cb, tcp_gso_segs) ?: 1;
	/* Since 6.14 the tracepoint also fires for retransmits that failed. */
	int err = targ_retrans_err ? (int)ctx[2] : 0;
	__u64 key = (__u64)sk;
	struct pyebpf_tcp_owner *owner = bpf_map_lookup_elem(&owners, &key);
	__u32 counted = err == -EBUSY ? 0 : segs; /* a guess only without an owner */

	/*
	 * The socket's own counter tells what this run must account for. A
	 * failure before the send (the original still in a host queue: -EBUSY,
	 * no window, no memory) counted nothing; one after it counted segs. The
	 * rest grew while no run of this hook saw it: the kernel fired the
	 * tracepoint without running it (seen on 6.18, in softirqs on top of an
	 * unrelated task) - a loss to count, not to hide.
	 */
	if (owner) {
		__u32 now = tcp_total_retrans(sk);
		__u32 grown = tcp_retrans_grown(now, owner->retrans_seen);

		counted = err && grown < segs ? 0 : segs;
		if (grown > counted)
			pyebpf_count_add(PYEBPF_TCP_CNT_RETRANS_UNSEEN, grown - counted);
		owner->retrans_seen = now;
	}
	if (err) {
		if (counted)
			pyebpf_count_add(PYEBPF_TCP_CNT_RETRANS_FAILED, counted);
		return 0;
	}
	tcp_emit_loss_owned(sk, owner, PYEBPF_LOSS_RETRANSMIT, NULL, segs, true, -1);
	return 0;
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(tcp_retransmit_synack, const struct sock *listener, const struct request_sock *req)
{
	struct pyebpf_tcp_addrs a;
	__u64 first_us;
	__u8 retrans = BPF_CORE_READ(req, num_retrans);

	/* The request socket's sock_common has the connection's addresses. */
	tcp_fill_addrs((const struct sock *)req, &a);
	if (targ_accept) {
		struct pyebpf_tcp_addrs key = a;

		first_us = BPF_CORE_READ((struct tcp_request_sock *)req, snt_synack);
		tcp_normalize(&key);
		if (first_us)
			bpf_map_update_elem(&synack_first, &key, &first_us, BPF_NOEXIST);
	}
	if (targ_loss)
		tcp_emit_loss(NULL, listener, PYEBPF_LOSS_SYNACK_RETRANSMIT, &a, retrans + 1, true, -1);
	return 0;
}

/* The addresses of a RST answering `skb`: its own addresses, swapped. */
static __always_inline bool tcp_reply_addrs(const struct sk_buff *skb, struct pyebpf_tcp_addrs *a)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	__u16 th = BPF_CORE_READ(skb, transport_header);
	struct tcphdr tcp;
	__u8 version;

	__builtin_memset(a, 0, sizeof(*a));
	if (bpf_probe_read_kernel(&version, 1, head + nh) || bpf_probe_read_kernel(&tcp, sizeof(tcp), head + th))
		return false;
	version >>= 4;
	if (version == 4) {
		struct iphdr ip;

		if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh))
			return false;
		a->family = PYEBPF_AF_INET;
		__builtin_memcpy(a->saddr, &ip.daddr, 4);
		__builtin_memcpy(a->daddr, &ip.saddr, 4);
	} else if (version == 6) {
		struct ipv6hdr ip6;

		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh))
			return false;
		a->family = PYEBPF_AF_INET6;
		__builtin_memcpy(a->saddr, &ip6.daddr, 16);
		__builtin_memcpy(a->daddr, &ip6.saddr, 16);
	} else {
		return false;
	}
	a->sport = bpf_ntohs(tcp.dest);
	a->dport = bpf_ntohs(tcp.source);
	return true;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset, const struct sock *sk, const struct sk_buff *skb)
{
	struct pyebpf_tcp_owner *owner;
	struct pyebpf_tcp_addrs a;
	__u32 reason = 0;
	__u64 key;

	if (targ_rst_reason)
		reason = (__u32)ctx[2]; /* enum sk_rst_reason, since 6.10 */
	/* skb set: a reply to that packet (sk may be NULL, a listener or a mini
	 * socket); skb NULL: an active reset of sk (close with unread data, abort). */
	if (skb) {
		if (!tcp_reply_addrs(skb, &a))
			return 0;
		if (sk)
			a.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
		else
			a.netns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
		tcp_emit_loss(sk, sk, PYEBPF_LOSS_SEND_RST, &a, reason, targ_rst_reason, -1);
	} else if (sk) {
		key = (__u64)sk;
		owner = bpf_map_lookup_elem(&owners, &key);
		tcp_probing_ends(sk, owner);
		tcp_emit_loss_owned(sk, owner, PYEBPF_LOSS_SEND_RST, NULL, reason, targ_rst_reason, -1);
	}
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct pyebpf_tcp_owner *owner = bpf_map_lookup_elem(&owners, &key);

	tcp_probing_ends(sk, owner);
	tcp_emit_loss_owned(sk, owner, PYEBPF_LOSS_RECV_RST, NULL, 0, false, -1);
	return 0;
}

SEC("tp_btf/tcp_cong_state_set")
int BPF_PROG(tcp_cong_state, struct sock *sk, const __u8 ca_state)
{
	/* Fires before icsk_ca_state changes: the old state is still readable. */
	__u8 old = BPF_CORE_READ_BITFIELD_PROBED((struct inet_connection_sock *)sk, icsk_ca_state);

	if (ca_state == old)
		return 0;
	if (ca_state == TCP_CA_Recovery)
		tcp_emit_loss(sk, sk, PYEBPF_LOSS_RECOVERY, NULL, old, true, ca_state);
	else if (ca_state == TCP_CA_Loss)
		tcp_emit_loss(sk, sk, PYEBPF_LOSS_LOSS, NULL, old, true, ca_state);
	return 0;
}

/*
 * Zero-window probes. No tracepoint marks tcp_send_probe0(), but it only runs
 * from the socket's write timer (tcp_write_timer, icsk_pending == PROBE0) and
 * increments icsk_probes_out when it sent a probe. So: remember the count when
 * such a timer starts, compare when it ends, on the same CPU. The kernel may
 * skip both hooks of a run, uncounted (this 6.18 host did, for timers expired
 * in a softirq on top of an unrelated task): the socket's next probe timer, or
 * its tcp_destroy_sock, finds the counters past what the hooks saw
 * (tcp_account_probes). A timer that finds the socket locked by its owner
 * leaves the work to release_sock(), in process context, where no hook runs:
 * counted as it is left, as the window may open before any later look.
 */
SEC("tp_btf/timer_expire_entry")
int BPF_PROG(tcp_timer_entry, struct timer_list *timer)
{
	struct inet_connection_sock *icsk;
	struct pyebpf_tcp_owner *owner;
	struct probe_timer *pt;
	__u32 zero = 0;
	__u64 key;

	/* Runs for every timer on the machine: two plain loads and compares. A
	 * socket in zero-window probing changed state (or was seeded) before, so
	 * the address is known by then. */
	__u64 write_timer = tcp_write_timer;

	if (!write_timer || (__u64)timer->function != write_timer)
		return 0;
	icsk = (void *)timer - bpf_core_field_offset(struct inet_connection_sock, icsk_retransmit_timer);
	if (BPF_CORE_READ(icsk, icsk_pending) != ICSK_TIME_PROBE0)
		return 0;
	pt = bpf_map_lookup_elem(&probe_timers, &zero);
	if (!pt)
		return 0;
	pt->timer = (__u64)timer;
	pt->sk = (__u64)icsk;
	pt->probes_out = BPF_CORE_READ(icsk, icsk_probes_out);
	key = (__u64)icsk;
	owner = bpf_map_lookup_elem(&owners, &key);
	if (owner) {
		tcp_account_probes((struct sock *)icsk, owner);
		owner->zero_window = 1;
	}
	return 0;
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(tcp_timer_exit, struct timer_list *timer)
{
	struct pyebpf_tcp_owner *owner;
	struct probe_timer *pt;
	struct sock *sk;
	__u32 zero = 0;
	__u8 probes;
	__u64 key, deferred;

	pt = bpf_map_lookup_elem(&probe_timers, &zero);
	if (!pt || pt->timer != (__u64)timer)
		return 0;
	pt->timer = 0;
	sk = (struct sock *)pt->sk;
	probes = BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_probes_out);
	key = pt->sk;
	owner = bpf_map_lookup_elem(&owners, &key);
	if (probes <= pt->probes_out) {
		/* The flag is as old as the deferral (Linux 3.x); checked all the same. */
		if (!bpf_core_enum_value_exists(enum tsq_enum, TCP_WRITE_TIMER_DEFERRED))
			return 0;
		deferred = 1UL << bpf_core_enum_value(enum tsq_enum, TCP_WRITE_TIMER_DEFERRED);
		if (!(owner || targ_host_scope) || !(BPF_CORE_READ(sk, sk_tsq_flags) & deferred))
			return 0;
		pyebpf_count(PYEBPF_TCP_CNT_PROBES_DEFERRED);
		if (owner) /* the owner's probe, if sent, is counted: not again later */
			tcp_probes_seen(owner, probes + 1,
					BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_backoff) + 1,
					tcp_nondata_segs(sk) + 1);
		return 0;
	}
	if (owner)
		tcp_probes_seen(owner, probes, BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_backoff),
				tcp_nondata_segs(sk));
	tcp_emit_loss_owned(sk, owner, PYEBPF_LOSS_ZERO_WINDOW, NULL, probes, true, -1);
	return 0;
}
