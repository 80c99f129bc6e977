// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <map>
#include <vector>

#include "bpf_runtime/handles.hpp"

namespace pyebpf::bpf {

// Detaches the links of `pid` in `links` (if any) on a background thread,
// up to 32 at once, once no target has been attached for a second (see
// DetachPause), or at once beyond 512 links waiting. Each uprobe detach waits
// for the kernel's RCU grace periods (~50-100 ms on the test machine): the
// nine probes of one recycled worker, detached on the event loop, held it
// for up to a second. The probes of a process that exited cost nothing while
// they wait; one that exec'd pays them in its new program (a filtered-out hit
// per C library call) until then. Links still queued at exit are detached
// before it completes.
void detach_later(std::map<pid_t, std::vector<Link>>& links, pid_t pid);

// Held while a new target's probes are attached. A perf-event uprobe's
// detach holds the kernel's trace event mutex across its grace periods, and
// every perf-event uprobe attach takes that mutex: a recycled worker's
// probes, attached while its predecessor's were being detached, waited
// 5-170 ms (median 44), and its first requests went unseen. So no detach
// starts while one of these exists, nor within a second after: a server
// recycling workers forks the next soon. (uprobe_multi links, where the
// kernel has them, take no such mutex: bpf_runtime/uprobe_links.hpp.)
class DetachPause {
 public:
  DetachPause();
  ~DetachPause();
  DetachPause(const DetachPause&) = delete;
  DetachPause& operator=(const DetachPause&) = delete;
};

}  // namespace pyebpf::bpf
