// SPDX-License-Identifier: Apache-2.0
#include "trackers/common/interval_stats.hpp"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/timer.hpp"

namespace pyebpf::trackers {

void IntervalTotals::add(const pyebpf_interval_stats& cpu, std::uint32_t epoch) {
  count += cpu.count;
  total_ns += cpu.total_ns;
  if (cpu.max_epoch[epoch & 1] == epoch) max_ns = std::max<std::uint64_t>(max_ns, cpu.max_ns[epoch & 1]);
  add_buckets(hist, cpu.hist);
}

IntervalTotals IntervalTotals::since(const IntervalTotals& earlier) const {
  IntervalTotals d = *this;
  d.count -= earlier.count;
  d.total_ns -= earlier.total_ns;
  for (std::size_t i = 0; i < hist.size(); ++i) d.hist[i] -= earlier.hist[i];
  return d;
}

void IntervalTotals::merge(const IntervalTotals& other) {
  count += other.count;
  total_ns += other.total_ns;
  max_ns = std::max(max_ns, other.max_ns);
  add_buckets(hist, other.hist);
}

double IntervalTotals::quantile_ms(double q) const {
  return latency_quantile_ms(hist, q, ns_to_ms(max_ns));
}

RecordedLatency recorded_latency(const sinks::Record& r, sinks::FieldId count, sinks::FieldId total_ms,
                                 sinks::FieldId max_ms, sinks::FieldId histogram) {
  RecordedLatency out;
  out.count = static_cast<std::uint64_t>(r.number(count).value_or(0));
  out.total_ms = r.number(total_ms).value_or(0);
  out.max_ms = r.number(max_ms).value_or(0);
  if (r.kind(histogram) == sinks::Record::Kind::Json) add_histogram_json(r.json(histogram), out.hist);
  return out;
}

IntervalStatsMap::IntervalStatsMap(std::string tracker, bpf_map* map, volatile std::uint32_t* epoch,
                                   std::size_t value_size, double interval_s)
    : tracker_(std::move(tracker)), map_(map), epoch_(epoch) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) throw Error(errno_text(tracker_ + ": count possible CPUs", -ncpus));
  cpus_ = static_cast<std::size_t>(ncpus);
  // Per-CPU values are copied in 8-byte slots, one per possible CPU.
  if (value_size % 8 || bpf_map__value_size(map_) != value_size)
    throw Error(tracker_ + ": " + bpf_map__name(map_) + " values are not the size user space reads");
  timer_ = make_timer(from_seconds(interval_s), from_seconds(interval_s));
  interval_start_ns_ = monotonic_ns();
}

bool IntervalStatsMap::due() {
  return expired(timer_);
}

void IntervalStatsMap::create(const void* key, pid_t pid) {
  const std::vector<std::uint8_t> zeros(bpf_map__value_size(map_) * cpus_);
  if (bpf_map_update_elem(bpf_map__fd(map_), key, zeros.data(), BPF_NOEXIST))
    throw Error(errno_text(tracker_ + ": add pid " + std::to_string(pid) + " to " + bpf_map__name(map_), errno));
}

bool IntervalStatsMap::read(const void* key, void* per_cpu) const {
  return bpf_map_lookup_elem(bpf_map__fd(map_), key, per_cpu) == 0;
}

void IntervalStatsMap::erase(const void* key) {
  bpf_map_delete_elem(bpf_map__fd(map_), key);
}

std::uint32_t IntervalStatsMap::end_epoch() {
  const std::uint32_t epoch = *epoch_;
  __atomic_store_n(epoch_, epoch + 1, __ATOMIC_SEQ_CST);
  return epoch;
}

}  // namespace pyebpf::trackers
