// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * handoff: time a server connection waits between being queued by one thread
 * and picked up by another (gunicorn gthread: the main thread takes a readable
 * connection out of its poller and submits it to the thread pool; a pool thread
 * then reads the request).
 *
 * Hooks: uprobes on the C library's system call wrappers, attached per target
 * process. A pid-scoped uprobe patches only that process's address space, so
 * other processes pay nothing (the raw syscall tracepoints this replaced put
 * every task on the host on the slow system call path); the target pays one
 * trap per call of these functions, on an instruction the kernel emulates
 * where the wrapper has one early enough (src/native/probe_site.hpp). Threads
 * share their process's probes.
 *
 *   queue:   return of accept4/accept (= fd), entry of epoll_ctl(EPOLL_CTL_DEL, fd)
 *   pickup:  entry of recv/recvfrom/recvmsg/read/readv(fd) by a thread other than
 *            the one that queued it (the queueing thread reading it first means the
 *            request was handled inline: no handoff, the entry is dropped)
 *   cancel:  entry of close(fd)
 *
 * State is keyed by (tgid, fd) in hash maps, so there is no limit on processes,
 * fds or thread ids (the original tool used fixed arrays with a 1500-fd stride).
 */
#include "python.bpf.h"
#include <bpf/bpf_tracing.h>
#include "handoff.h"
#include "ringbuf.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define EPOLL_CTL_DEL 2
#define RCV_SHUTDOWN  1
#define S_IFMT	      00170000
#define S_IFSOCK      0140000

/* Set by user space before load. */
const volatile __u64 targ_min_handoff_ns = 0;
/* Wake the reader only once this many bytes wait (0: on every event); it also polls every second. */
const volatile __u64 targ_wakeup_bytes = 0;

/* 4,096 events of 128 bytes: 0.2 s of 20,000 handoffs/s while the reader,
 * woken every 64 KiB, is kept off the CPU. Its pages are resident from the
 * start and mapped twice: 1 MB of pyebpf's RSS. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
} events SEC(".maps");

/* (tgid << 32 | fd) -> who queued it, when. LRU: fds leaked by means we do not hook
 * (close_range, dup2 over them) age out instead of filling the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct pyebpf_handoff_queued);
} queued SEC(".maps");

/* (tgid << 32 | tid) -> last pickup time: the worker threads in use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} workers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct pyebpf_handoff_stats);
} stats SEC(".maps");

static const struct pyebpf_handoff_stats zero_stats;

/* Only reserved from the ring buffer as raw memory: this puts the event type in
 * the object's BTF, where the layout test compares it with the C++ view. */
struct pyebpf_handoff_event *const volatile event_btf_anchor = 0;

static __always_inline struct pyebpf_handoff_stats *stats_of(__u32 tgid)
{
	struct pyebpf_handoff_stats *s = bpf_map_lookup_elem(&stats, &tgid);

	if (s)
		return s;
	bpf_map_update_elem(&stats, &tgid, &zero_stats, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&stats, &tgid);
	if (!s)
		pyebpf_count(PYEBPF_HANDOFF_CNT_STATS_FULL);
	return s;
}

static __always_inline __u64 fd_key(__u32 tgid, __s64 fd)
{
	return ((__u64)tgid << 32) | (__u32)fd;
}

static __always_inline void queue_fd(__u32 tgid, __s64 fd, __u8 path)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pyebpf_handoff_queued q = {};
	struct pyebpf_handoff_stats *s;
	__u64 key = fd_key(tgid, fd);

	q.ts_ns = bpf_ktime_get_ns();
	q.thread_id = pyebpf_thread_pointer(task);
	q.tid = (__u32)bpf_get_current_pid_tgid();
	q.ns_tid = pyebpf_ns_id(BPF_CORE_READ(task, thread_pid));
	q.path = path;
	bpf_get_current_comm(&q.comm, sizeof(q.comm));
	pyebpf_count(PYEBPF_CNT_HITS);
	/* A newly queued fd counts once; an accepted fd later taken out of the poller
	 * (accept, register, readable, unregister) is the same request re-stamped. */
	if (!bpf_map_update_elem(&queued, &key, &q, BPF_NOEXIST)) {
		s = stats_of(tgid);
		if (s)
			s->queued += 1;
		return;
	}
	if (bpf_map_update_elem(&queued, &key, &q, BPF_ANY))
		pyebpf_count(PYEBPF_HANDOFF_CNT_QUEUE_FULL);
}

/*
 * True if fd is a socket with nothing left to read but the peer's FIN: the
 * read will return 0. Keep-alive connections end this way (the closed
 * connection turns readable, is queued and picked up like a request); such
 * pickups are counted apart instead of reported as requests.
 */
static __always_inline bool fd_at_eof(__s64 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *file = NULL;
	struct socket *sock;
	struct tcp_sock *tp;
	struct sock *sk;

	if (fd >= BPF_CORE_READ(fdt, max_fds))
		return false;
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	if (!file || (BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return false;
	sock = BPF_CORE_READ(file, private_data);
	sk = BPF_CORE_READ(sock, sk);
	/* sk_shutdown and sk_protocol were bitfields in older kernels: read either way */
	if (!sk || !(BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & RCV_SHUTDOWN))
		return false;
	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return BPF_CORE_READ(sk, sk_receive_queue.qlen) == 0; /* unix stream: no FIN skb */
	/* TCP queues the FIN as an skb of its own and it takes one sequence number:
	 * unread bytes = rcv_nxt - copied_seq - 1 */
	tp = (struct tcp_sock *)sk;
	return BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq) <= 1;
}

/* A queued fd picked up after `wait_ns`: into its target's request_queue totals. */
static __always_inline void count_pickup(struct pyebpf_handoff_stats *s, __u64 wait_ns)
{
	__u32 bucket;

	if (!s)
		return;
	s->picked += 1;
	s->sum_ns += wait_ns;
	bucket = pyebpf_latency_bucket(wait_ns / 1000);
	barrier_var(bucket);
	if (bucket < PYEBPF_LATENCY_BUCKETS)
		s->hist[bucket] += 1;
}

/* The handoff event of queued fd `q`, picked up now by the current thread. */
static __always_inline void send_handoff(const struct pyebpf_handoff_queued *q, __s64 fd, __u8 via, __u64 now)
{
	struct pyebpf_handoff_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		pyebpf_count(PYEBPF_CNT_RINGBUF_FULL);
		return;
	}
	pyebpf_fill_header(&ev->hdr, bpf_get_current_task_btf(), q->ts_ns);
	ev->pickup_ns = now;
	__builtin_memcpy(&ev->main, q, sizeof(ev->main));
	ev->fd = (__s32)fd;
	ev->pickup_via = via;
	ev->pad[0] = ev->pad[1] = ev->pad[2] = 0;
	bpf_ringbuf_submit(ev, targ_wakeup_bytes ? pyebpf_rb_wake_past(&events, targ_wakeup_bytes) : 0);
	pyebpf_count(PYEBPF_CNT_EVENTS);
}

static __always_inline void pickup(__u32 tgid, __s64 fd, __u8 via)
{
	struct pyebpf_handoff_queued *q;
	struct pyebpf_handoff_stats *s;
	__u64 key = fd_key(tgid, fd), now, wait_ns, worker_key;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	q = bpf_map_lookup_elem(&queued, &key);
	if (!q)
		return;
	s = stats_of(tgid);
	if (q->tid == tid) {
		/* Read by the thread that queued it: served inline (sync worker, selector
		 * user on an outbound socket). Not a handoff; forget it. */
		bpf_map_delete_elem(&queued, &key);
		if (s)
			s->same_thread += 1;
		return;
	}
	if (fd_at_eof(fd)) {
		bpf_map_delete_elem(&queued, &key);
		if (s)
			s->peer_closed += 1;
		return;
	}
	now = bpf_ktime_get_ns();
	wait_ns = now > q->ts_ns ? now - q->ts_ns : 0;
	count_pickup(s, wait_ns);
	worker_key = ((__u64)tgid << 32) | tid;
	bpf_map_update_elem(&workers, &worker_key, &now, BPF_ANY);
	if (wait_ns < targ_min_handoff_ns)
		pyebpf_count(PYEBPF_CNT_FILTERED);
	else
		send_handoff(q, fd, via, now);
	bpf_map_delete_elem(&queued, &key);
}

static __always_inline void cancel(__u32 tgid, __s64 fd)
{
	struct pyebpf_handoff_stats *s;
	__u64 key = fd_key(tgid, fd);

	if (bpf_map_delete_elem(&queued, &key))
		return; /* not queued: the common case */
	s = stats_of(tgid);
	if (s)
		s->cancelled += 1;
}

/* The probes are per process, yet queueing checks the target: one hash lookup
 * that keeps the tracker exact should the kernel's per-process uprobe filter
 * let another process's call through (a forked child shares the patched text
 * until its first hit). Pickup and cancel need no check: they only act on
 * fds queued under the caller's own tgid, and they run on every read and
 * close of the target, where a lookup saved is saved on each call. */
static __always_inline bool traced(__u32 *tgid)
{
	*tgid = bpf_get_current_pid_tgid() >> 32;
	return pyebpf_lookup_proc(*tgid) != NULL;
}

SEC("uretprobe")
int BPF_KRETPROBE(handoff_accept_ret, int ret)
{
	__u32 tgid;

	if (ret >= 0 && traced(&tgid))
		queue_fd(tgid, ret, PYEBPF_HANDOFF_PATH_ACCEPT);
	return 0;
}

/* Placed after the system call where that is where the first emulated
 * instruction is (glibc 2.36): there only a DEL that succeeded queues. */
SEC("uprobe")
int BPF_KPROBE(handoff_epoll_ctl, int epfd, int op, int fd)
{
	__u32 tgid;

	if ((bpf_get_attach_cookie(ctx) & PYEBPF_COOKIE_AFTER_SYSCALL) && PT_REGS_RC(ctx) != 0)
		return 0;
	if (op == EPOLL_CTL_DEL && fd >= 0 && traced(&tgid))
		queue_fd(tgid, fd, PYEBPF_HANDOFF_PATH_EPOLL_DEL);
	return 0;
}

/* recv/recvfrom/recvmsg/read/readv: the cookie is the enum pyebpf_handoff_via
 * value of the function (recv() is the recvfrom system call, and named so). */
SEC("uprobe")
int BPF_KPROBE(handoff_pickup, int fd)
{
	if (fd >= 0)
		pickup(bpf_get_current_pid_tgid() >> 32, fd, (__u8)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(handoff_close, int fd)
{
	if (fd >= 0)
		cancel(bpf_get_current_pid_tgid() >> 32, fd);
	return 0;
}
