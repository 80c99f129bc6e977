// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// True if the running kernel's BTF describes the tracepoint `name` (its
// btf_trace_<name> typedef): it exists and BPF can attach to it by name, as
// tp_btf or raw_tp, bare tracepoints without a tracefs event included.
// vmlinux BTF is parsed once per process. Never throws.
bool kernel_has_tracepoint(const char* name);

// True if this kernel loads a BTF-typed raw tracepoint program (tp_btf) for
// `tracepoint` (e.g. "sched_switch"): the kernel has BTF, knows the
// tracepoint and accepts BPF_PROG_TYPE_TRACING. Loads and discards a
// two-instruction program; never throws.
bool probe_tp_btf(const char* tracepoint);

}  // namespace pyebpf::bpf
