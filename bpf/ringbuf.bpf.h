/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* BPF-only: ring buffer submission policy shared by high-rate trackers. */
#ifndef PYEBPF_RINGBUF_BPF_H
#define PYEBPF_RINGBUF_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/*
 * Flags for bpf_ringbuf_submit/output that wake the consumer only once `batch`
 * bytes are waiting. A wakeup per event costs a context switch per event in
 * the traced workload's critical path (thousands per second under load);
 * trackers using this must also drain their ring buffer from tick(), which
 * bounds the delivery delay of a quiet stream to one tick.
 */
static __always_inline __u64 pyebpf_rb_batch_flags(void *ringbuf, __u64 batch)
{
	return bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA) >= batch ? BPF_RB_FORCE_WAKEUP
								      : BPF_RB_NO_WAKEUP;
}

#endif /* PYEBPF_RINGBUF_BPF_H */
