// SPDX-License-Identifier: Apache-2.0
// Per-target durations counted in BPF (bpf/interval_stats.h) and emitted as
// one record per target per interval: gc's gc_stats, gil's gil_stats.
#pragma once

#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "interval_stats.h"
#include "pyebpf/fd.hpp"
#include "sinks/record.hpp"
#include "trackers/common/latency_histogram.hpp"
#include "util/clock.hpp"

namespace pyebpf::trackers {

// struct pyebpf_interval_stats summed over CPUs, or the difference of two
// such sums (an interval), or several intervals merged.
struct IntervalTotals {
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t max_ns = 0;  // the longest of one interval (merged: of all of them)
  LatencyHistogram hist{};

  // One CPU's value; its longest duration counts if it is interval `epoch`'s.
  void add(const pyebpf_interval_stats& cpu, std::uint32_t epoch);
  // this - earlier (an older reading of the same entry); max_ns stays this one's.
  IntervalTotals since(const IntervalTotals& earlier) const;
  void merge(const IntervalTotals& other);
  // A percentile from the histogram, in ms: within its bucket (12.5 %) and
  // never above the longest duration, which is exact.
  double quantile_ms(double q) const;
};

// An interval record's durations (gc_stats, gil_stats): its count, total,
// max and histogram fields, for the report to merge.
RecordedLatency recorded_latency(const sinks::Record& r, sinks::FieldId count, sinks::FieldId total_ms,
                                 sinks::FieldId max_ms, sinks::FieldId histogram);

// The parts of IntervalStats that do not depend on the map's types.
class IntervalStatsMap {
 public:
  // `epoch`: the BPF object's stats_epoch (bss); `value_size`: one CPU's value.
  IntervalStatsMap(std::string tracker, bpf_map* map, volatile std::uint32_t* epoch, std::size_t value_size,
                   double interval_s);

  // The timerfd that fires every interval, for the runner's wait_fds().
  int timer_fd() const { return timer_.get(); }
  // Reads the timer: true if an interval is over.
  bool due();

 protected:
  // A zeroed entry for `key`, made by user space so BPF only updates; throws.
  void create(const void* key, pid_t pid);
  // All CPUs' values of `key` into `per_cpu`; false if the entry is gone.
  bool read(const void* key, void* per_cpu) const;
  void erase(const void* key);
  // Longest durations from now on go to the next epoch's slot; returns the
  // epoch of the interval that ends. A duration ending on another CPU right
  // now may still land in that slot after the read: then only the interval's
  // max misses it.
  std::uint32_t end_epoch();

  std::string tracker_;
  bpf_map* map_;
  volatile std::uint32_t* epoch_;
  std::size_t cpus_ = 0;
  Fd timer_;
  std::uint64_t interval_start_ns_ = 0;
  std::set<pid_t> gone_;  // targets removed: their entries go after their last interval
};

// One tracker's per-CPU stats map of (Key -> Value): Key has a `pid`, Value a
// `hdr` (the header of some thread of the target: who it is). Totals sums a
// Value over CPUs: add(const Value&, epoch), since(), merge(), empty().
// Entries are made per target, read and differenced per interval and handed
// to `emit`, and dropped once a gone target's last interval is out.
template <typename Key, typename Value, typename Totals>
class IntervalStats : public IntervalStatsMap {
 public:
  // emit(key, header, interval totals, interval seconds) for each entry that
  // saw something in the interval; the header's ts_ns is the interval's start.
  using Emit = std::function<void(const Key&, const pyebpf_event_header&, const Totals&, double)>;

  IntervalStats(std::string tracker, bpf_map* map, volatile std::uint32_t* epoch, double interval_s, Emit emit)
      : IntervalStatsMap(std::move(tracker), map, epoch, sizeof(Value), interval_s), emit_(std::move(emit)) {}

  // A new target's entry. A reused pid: its last owner's interval goes first.
  void add(const Key& key) {
    if (gone_.count(static_cast<pid_t>(key.pid))) flush();
    create(&key, static_cast<pid_t>(key.pid));
    entries_.push_back({key, {}});
  }
  // The target is gone: its entries go after the next flush().
  void forget(pid_t pid) { gone_.insert(pid); }

  // Emits the interval that ends now (on the timer, and at the end).
  void flush() {
    const std::uint32_t epoch = end_epoch();
    const std::uint64_t now = monotonic_ns();
    const double seconds = static_cast<double>(now - interval_start_ns_) / 1e9;
    std::vector<Value> per_cpu(cpus_);
    for (auto& entry : entries_) {
      if (!read(&entry.key, per_cpu.data())) continue;
      Totals reading;
      pyebpf_event_header hdr{};
      for (const auto& cpu : per_cpu) {
        reading.add(cpu, epoch);
        if (!hdr.pid && cpu.hdr.pid) hdr = cpu.hdr;
      }
      const Totals interval = reading.since(entry.read);
      entry.read = reading;
      if (interval.empty()) continue;
      run_.merge(interval);
      hdr.ts_ns = interval_start_ns_;
      emit_(entry.key, hdr, interval, seconds);
      ++records_;
    }
    interval_start_ns_ = now;
    std::erase_if(entries_, [&](const Entry& entry) {
      if (!gone_.count(static_cast<pid_t>(entry.key.pid))) return false;
      erase(&entry.key);
      return true;
    });
    gone_.clear();
  }

  // Every interval emitted so far, of every target, merged.
  const Totals& run() const { return run_; }
  std::size_t records() const { return records_; }

 private:
  struct Entry {
    Key key;
    Totals read;  // the last reading: the next interval starts there
  };
  Emit emit_;
  std::vector<Entry> entries_;
  Totals run_;
  std::size_t records_ = 0;
};

}  // namespace pyebpf::trackers
