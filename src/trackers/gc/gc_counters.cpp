// SPDX-License-Identifier: Apache-2.0
#include "trackers/gc/gc_counters.hpp"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "pyebpf/error.hpp"

namespace pyebpf::trackers {

std::int64_t GcReading::collections() const {
  std::int64_t n = 0;
  for (const auto& g : gen) n += g.collections;
  return n;
}

namespace {

// Where the totals start: in the GC state, or (3.15+) where it points.
std::optional<std::uint64_t> totals_address(const python::ProcessMemory& memory, const pyebpf_gc_proc& cfg) {
  const std::uint64_t totals = cfg.gcstate + cfg.stats;
  if (!cfg.stats_pointer) return totals;
  auto ptr = memory.read_u64(totals);
  if (!ptr || !*ptr) return std::nullopt;
  return *ptr;
}

// Generation g's counters from its entry's bytes.
void copy_generation(const GcCounterLayout& layout, const std::uint8_t* entry, int g, GcReading& out) {
  const pyebpf_gc_proc& cfg = layout.cfg;
  std::memcpy(&out.gen[g].collections, entry + cfg.collections, 8);
  std::memcpy(&out.gen[g].collected, entry + cfg.collected, 8);
  std::memcpy(&out.gen[g].uncollectable, entry + cfg.uncollectable, 8);
  if (layout.duration) std::memcpy(&out.duration_s[g], entry + *layout.duration, 8);
}

// Generation g's entry in a ring: its newest, named by the ring's index byte.
bool read_ring_entry(const python::ProcessMemory& memory, const GcCounterLayout& layout, std::uint64_t totals, int g,
                     GcReading& out) {
  const pyebpf_gc_proc& cfg = layout.cfg;
  const std::uint64_t ring = totals + cfg.gen[g].base;
  auto index = memory.read_value<std::uint8_t>(ring + cfg.gen[g].index);
  if (!index || *index >= cfg.gen[g].length) return false;
  auto bytes = memory.read_bytes(ring + std::uint64_t{*index} * cfg.entry_size, cfg.entry_size);
  if (!bytes || bytes->size() != cfg.entry_size) return false;
  copy_generation(layout, bytes->data(), g, out);
  return true;
}

}  // namespace

std::optional<GcReading> read_gc_counters(const python::ProcessMemory& memory, const GcCounterLayout& layout,
                                          int* failed_generation) {
  const pyebpf_gc_proc& cfg = layout.cfg;
  auto fail = [&](int g) -> std::optional<GcReading> {
    if (failed_generation) *failed_generation = g;
    return std::nullopt;
  };
  auto totals = totals_address(memory, cfg);
  if (!totals) return fail(0);
  GcReading out;
  out.timed = layout.duration.has_value();
  if (cfg.totals_bytes) {  // no rings: every generation's entry in one span, read once
    auto span = memory.read_bytes(*totals, cfg.totals_bytes);
    if (!span || span->size() != cfg.totals_bytes) return fail(0);
    for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g) copy_generation(layout, span->data() + cfg.gen[g].base, g, out);
    return out;
  }
  for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g)
    if (!read_ring_entry(memory, layout, *totals, g, out)) return fail(g);
  return out;
}

GcGenerationDelta gc_delta(const GcReading& later, const GcReading& earlier, int g) {
  GcGenerationDelta d;
  d.collections = later.gen[g].collections - earlier.gen[g].collections;
  d.collected = later.gen[g].collected - earlier.gen[g].collected;
  d.uncollectable = later.gen[g].uncollectable - earlier.gen[g].uncollectable;
  if (later.timed && earlier.timed) d.duration_ms = (later.duration_s[g] - earlier.duration_s[g]) * 1e3;
  return d;
}

GcSamples::GcSamples(bpf_map* map) : map_(map) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) throw Error(errno_text("gc: count possible CPUs", -ncpus));
  cpus_ = static_cast<std::size_t>(ncpus);
}

void GcSamples::add(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  std::vector<pyebpf_gc_samples> zero(cpus_);
  if (bpf_map_update_elem(bpf_map__fd(map_), &key, zero.data(), BPF_ANY))
    throw Error(errno_text("gc: add pid " + std::to_string(pid) + " to gc_samples", errno));
  last_[pid] = {};
}

void GcSamples::remove(pid_t pid) {
  const __u32 key = static_cast<__u32>(pid);
  bpf_map_delete_elem(bpf_map__fd(map_), &key);
  last_.erase(pid);
}

std::optional<GcSamples::Interval> GcSamples::next_interval(pid_t pid) {
  auto last = last_.find(pid);
  if (last == last_.end()) return std::nullopt;
  const __u32 key = static_cast<__u32>(pid);
  std::vector<pyebpf_gc_samples> per_cpu(cpus_);
  if (bpf_map_lookup_elem(bpf_map__fd(map_), &key, per_cpu.data())) return std::nullopt;
  Interval now;
  for (const auto& cpu : per_cpu) {
    now.samples += cpu.samples;
    now.collecting += cpu.collecting;
    if (!now.hdr.pid && cpu.hdr.pid) now.hdr = cpu.hdr;
  }
  Interval out{now.samples - last->second.samples, now.collecting - last->second.collecting, now.hdr};
  last->second = now;
  return out;
}

}  // namespace pyebpf::trackers
