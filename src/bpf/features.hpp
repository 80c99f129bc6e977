// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace pyebpf::bpf {

// True if the running kernel's BTF describes the raw tracepoint `name`
// (typedef btf_trace_<name>), i.e. a tp_btf/<name> program can attach. The
// vmlinux BTF is parsed once per process.
bool kernel_has_btf_tracepoint(const char* name);

}  // namespace pyebpf::bpf
