// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
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
  std::uint64_t cookie = 0;  // bpf_get_attach_cookie() in the program
};

// Attaches every probe for process `pid` alone, in each copy of its function
// that `pid` maps (native::libc_functions): the kernel patches that process's
// address space only, so other processes pay nothing, and its threads, now
// and later, share the probes. Logs what was hooked (info, `who`: the
// tracker). A process that cannot be hooked (a function found nowhere, an
// attach failing) is a warning ending in `consequence`, and no links.
std::optional<std::vector<Link>> attach_libc_probes(pid_t pid, const std::vector<LibcProbe>& probes,
                                                    const std::string& who, const std::string& consequence);

}  // namespace pyebpf::bpf
