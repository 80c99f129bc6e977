// SPDX-License-Identifier: Apache-2.0
#include "trackers/handoff/request_queue.hpp"

namespace pyebpf::trackers {

void HandoffTotals::add(const pyebpf_handoff_stats& cpu) {
  queued += cpu.queued;
  picked += cpu.picked;
  cancelled += cpu.cancelled;
  same_thread += cpu.same_thread;
  peer_closed += cpu.peer_closed;
  sum_ns += cpu.sum_ns;
  add_buckets(hist, cpu.hist);
}

HandoffTotals HandoffTotals::since(const HandoffTotals& earlier) const {
  // Counters only grow; a smaller value means the map entry was recreated
  // (process gone and back): count from zero rather than wrap.
  auto diff = [](std::uint64_t now, std::uint64_t then) { return now >= then ? now - then : now; };
  HandoffTotals d;
  d.queued = diff(queued, earlier.queued);
  d.picked = diff(picked, earlier.picked);
  d.cancelled = diff(cancelled, earlier.cancelled);
  d.same_thread = diff(same_thread, earlier.same_thread);
  d.peer_closed = diff(peer_closed, earlier.peer_closed);
  d.sum_ns = diff(sum_ns, earlier.sum_ns);
  for (std::size_t i = 0; i < hist.size(); ++i) d.hist[i] = diff(hist[i], earlier.hist[i]);
  return d;
}

}  // namespace pyebpf::trackers
