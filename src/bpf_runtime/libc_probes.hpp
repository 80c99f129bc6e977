// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bpf_runtime/handles.hpp"
#include "native/probe_site.hpp"

namespace pyebpf::bpf {

// A BPF program for the entry (uprobe) or the return (uretprobe) of a C
// library function.
struct LibcProbe {
  const char* function;  // "accept4"
  bpf_program* program;
  bool retprobe = false;
  // bpf_get_attach_cookie() in the program; attach_libc_probes() adds
  // PYEBPF_COOKIE_AFTER_SYSCALL where the probe follows the system call.
  std::uint64_t cookie = 0;
  native::ProbeNeeds needs;  // what the program reads there (a uretprobe's entry: nothing)
};

// Attaches every probe for process `pid` alone, in each copy of its function
// that `pid` maps (native::libc_functions): the kernel patches that process's
// address space only, so other processes pay nothing, and its threads, now
// and later, share the probes. Each goes on the function's cheapest site for
// what its program reads (native::find_probe_site), which the target pays on
// every call; offset 0 where the kernel refuses that site. Logs what was
// hooked and where (info, `who`: the tracker). Throws pyebpf::Error naming
// what could not be hooked (a function found nowhere, an attach failing).
std::vector<Link> attach_libc_probes(pid_t pid, const std::vector<LibcProbe>& probes, const std::string& who);

}  // namespace pyebpf::bpf
