// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

namespace pyebpf::bpf {

// Whether Python frame walks (targ_use_bpf_loop in bpf/python.bpf.h) use
// bpf_loop(): where the running kernel offers it (Linux 5.17+) to perf_event,
// kprobe-class and tracing programs, probed once by loading a tiny program.
// PYEBPF_FRAME_WALK=bounded in the environment picks the bounded loop older
// kernels get, so tests load and run it here (docs/development.md).
bool walk_frames_with_bpf_loop();

// True if the running kernel's BTF describes the raw tracepoint `name`
// (typedef btf_trace_<name>), i.e. a tp_btf/<name> program can attach. The
// vmlinux BTF is parsed once and kept until release_kernel_btf().
bool kernel_has_btf_tracepoint(const char* name);

// Frees the parsed vmlinux BTF (~11 MB of heap) that the checks here and
// libbpf's loads of every BPF object share (features.cpp: the linker wrap);
// the runner calls it once every tracker has started. It also returns the
// heap start-up freed to the system. A later check or load parses it again.
void release_kernel_btf();

// Whether the running kernel's `struct <name>` has member `member` (its BTF),
// for CO-RE reads of fields that depend on the kernel's configuration.
bool kernel_struct_has_member(const char* name, const char* member);

// Arguments the raw tracepoint `name` passes (without the leading context
// pointer), -1 if the kernel has no such tracepoint. Tracepoints gain
// arguments across kernel versions (tcp_send_reset's reason in 6.10).
int btf_tracepoint_args(const char* name);

// Names of the values of kernel enum `name`, indexed by value, with `prefix`
// removed (enum sk_rst_reason -> "NOT_SPECIFIED", ...). Empty if absent.
std::vector<std::string> kernel_enum_names(const char* name, const std::string& prefix);

// True if this kernel also loads a BTF-typed raw tracepoint program (tp_btf)
// for `name` (e.g. "sched_switch"): it accepts BPF_PROG_TYPE_TRACING attached
// to that tracepoint. Loads and discards a two-instruction program.
bool kernel_loads_tp_btf(const char* name);

}  // namespace pyebpf::bpf
