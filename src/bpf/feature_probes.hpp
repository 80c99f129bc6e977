// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// True if this kernel loads a BTF-typed raw tracepoint program (tp_btf) for
// `tracepoint` (e.g. "sched_switch"): the kernel has BTF, knows the
// tracepoint's btf_trace_<name> type and accepts BPF_PROG_TYPE_TRACING.
// Loads and discards a two-instruction program; never throws.
bool probe_tp_btf(const char* tracepoint);

}  // namespace pyebpf::bpf
