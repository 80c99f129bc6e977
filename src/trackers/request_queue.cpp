// SPDX-License-Identifier: Apache-2.0
#include "trackers/request_queue.hpp"

#include <cmath>

namespace pyebpf::trackers {

void HandoffTotals::add(const pyebpf_handoff_stats& cpu) {
  queued += cpu.queued;
  picked += cpu.picked;
  cancelled += cpu.cancelled;
  same_thread += cpu.same_thread;
  peer_closed += cpu.peer_closed;
  sum_ns += cpu.sum_ns;
  for (std::size_t i = 0; i < hist.size(); ++i) hist[i] += cpu.hist[i];
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

BucketRange handoff_bucket_range(std::uint32_t bucket) {
  if (bucket < 4) return {static_cast<double>(bucket), static_cast<double>(bucket + 1)};
  std::uint32_t e = bucket / 4 + 1;  // inverse of 4 * (e - 1) + sub
  std::uint32_t sub = bucket % 4;
  double unit = std::ldexp(1.0, static_cast<int>(e) - 2);
  double low = (4 + sub) * unit;
  double high = bucket == PYEBPF_HANDOFF_BUCKETS - 1 ? low + unit : (5 + sub) * unit;
  return {low, high};
}

double histogram_quantile_us(const std::array<std::uint64_t, PYEBPF_HANDOFF_BUCKETS>& hist, double q) {
  std::uint64_t total = 0;
  for (auto n : hist) total += n;
  if (total == 0) return 0;
  // Rank of the quantile among `total` sorted values, 1-based (nearest rank).
  double rank = std::ceil(q * static_cast<double>(total));
  if (rank < 1) rank = 1;
  double seen = 0;
  for (std::uint32_t b = 0; b < hist.size(); ++b) {
    if (hist[b] == 0) continue;
    double n = static_cast<double>(hist[b]);
    if (seen + n >= rank) {
      BucketRange r = handoff_bucket_range(b);
      // The values of a bucket are spread evenly over it: the k-th of n sits at
      // the middle of the k-th slice.
      double k = rank - seen;
      return r.low_us + (r.high_us - r.low_us) * (k - 0.5) / n;
    }
    seen += n;
  }
  return handoff_bucket_range(PYEBPF_HANDOFF_BUCKETS - 1).high_us;
}

}  // namespace pyebpf::trackers
