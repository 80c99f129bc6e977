// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "bpf/handles.hpp"

namespace pyebpf::bpf {

// A BPF program for the entry (uprobe) or the return (uretprobe) of a C
// library function.
struct LibcProbe {
  const char* function;  // "accept4"
  bpf_program* program;
  bool retprobe = false;
};

// Attaches every probe for process `pid` alone, in each copy of its function
// that `pid` maps (native::libc_functions): the kernel patches that process's
// address space only, so other processes pay nothing, and its threads, now
// and later, share the probes. `who` names the tracker in errors and in
// `where`, which receives a one-line description of what was hooked. Throws
// pyebpf::Error naming the function when one is found nowhere or an attach
// fails (the links attached so far are released).
std::vector<Link> attach_libc_probes(pid_t pid, const std::vector<LibcProbe>& probes, const std::string& who,
                                     std::string& where);

}  // namespace pyebpf::bpf
