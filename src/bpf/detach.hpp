// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <map>
#include <vector>

#include "bpf/handles.hpp"

namespace pyebpf::bpf {

// Detaches the links of `pid` in `links` (if any) on a background thread.
// Each uprobe detach waits for the kernel's RCU grace period (~100 ms on the
// test machine): the nine probes of one recycled worker, detached on the
// event loop, held it for about a second, and the next worker's fork was read
// that late. Links still queued at exit are detached before it completes.
void detach_later(std::map<pid_t, std::vector<Link>>& links, pid_t pid);

}  // namespace pyebpf::bpf
