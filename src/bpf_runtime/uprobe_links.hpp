// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bpf_runtime/handles.hpp"

namespace pyebpf::bpf {

// Uprobes for one process. A kernel with uprobe_multi links (6.6+) gets one
// link per program and file for all its sites; older kernels get one
// perf-event uprobe per site. Why: closing a perf-event uprobe waits for RCU
// grace periods while holding the kernel's trace event mutex, ~100 ms each
// here and one at a time, and every uprobe attach on the host takes that
// mutex. A server recycling a worker every second left its nine handoff
// probes to detach, 0.9 s per worker, and pyebpf took ~45 s to exit after a
// busy run. A uprobe_multi link takes no global mutex and waits once for
// all its sites: closed together, the nine detach in ~50 ms.

// Whether this kernel creates uprobe_multi links. Probed once.
bool kernel_has_uprobe_multi();

// Marks the object's uprobe and uretprobe programs for uprobe_multi links
// when the kernel has them (a program is loaded for one kind of link or the
// other). Skeleton::load calls it, so every tracker's programs agree with
// attach_process_uprobes().
void prepare_process_uprobes(bpf_object* object);

struct UprobeSite {
  std::uint64_t offset;      // in the file
  std::uint64_t cookie = 0;  // bpf_get_attach_cookie()
};

// Attaches `program` (a uretprobe if `retprobe`) at `sites` in the file
// `path` for the threads of process `pid` alone: the kernel patches that
// process's address space only. Empty with errno set if the kernel refused.
std::vector<Link> attach_process_uprobes(bpf_program* program, pid_t pid, const std::string& path,
                                         std::span<const UprobeSite> sites, bool retprobe);

}  // namespace pyebpf::bpf
