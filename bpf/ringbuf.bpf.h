/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* BPF-only: ring buffer wakeup policy shared by high-rate trackers. */
#ifndef PYEBPF_RINGBUF_BPF_H
#define PYEBPF_RINGBUF_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* When pyebpf_rb_wakeup_flags() last woke the reader: one per BPF object
 * (each includes this header once), shared by all CPUs; a race costs at most
 * an extra wakeup. */
__u64 pyebpf_rb_last_wake_ns = 0;

/*
 * Flags for bpf_ringbuf_submit/output that wake the consumer at most once per
 * `min_gap_ns`, or when `batch` bytes are waiting. By default the kernel wakes
 * the consumer for every record it finds caught up, which under load means a
 * context switch per event competing with the traced workload for CPU. Here a
 * sparse event is still delivered at once (its thread is likely alive, so its
 * name can be read), while a stream is delivered in batches. A record that
 * arrives within min_gap_ns of a wakeup and is followed by silence waits for
 * the next one, so trackers using this also drain on a timer.
 */
static __always_inline __u64 pyebpf_rb_wakeup_flags(void *ringbuf, __u64 batch, __u64 min_gap_ns)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - pyebpf_rb_last_wake_ns < min_gap_ns && bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA) < batch)
		return BPF_RB_NO_WAKEUP;
	pyebpf_rb_last_wake_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * Flags for a ring whose reader also drains it on a timer (RingBuffer with a
 * poll interval): wake the reader only once `batch` bytes are waiting, so a
 * high event rate costs no wakeup per event.
 */
static __always_inline __u64 pyebpf_rb_wake_past(void *ringbuf, __u64 batch)
{
	return bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA) >= batch ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#endif /* PYEBPF_RINGBUF_BPF_H */
