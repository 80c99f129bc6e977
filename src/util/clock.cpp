// SPDX-License-Identifier: Apache-2.0
#include "util/clock.hpp"

#include <cmath>
#include <ctime>
#include <limits>

namespace pyebpf {
namespace {

std::int64_t ns_of(const timespec& ts) {
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ns_of(ts));
}

WallClock::WallClock() {
  refresh();
}

void WallClock::refresh() {
  // Bracket a realtime read between two monotonic reads and keep the tightest
  // of a few tries, so scheduling noise does not end up in the offset.
  std::int64_t best_gap = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < 5; ++i) {
    timespec m1{}, rt{}, m2{};
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    std::int64_t gap = ns_of(m2) - ns_of(m1);
    if (gap < best_gap) {
      best_gap = gap;
      offset_ns_ = ns_of(rt) - (ns_of(m1) + gap / 2);
    }
  }
}

std::int64_t WallClock::epoch_us(std::uint64_t monotonic_ns) const {
  return (static_cast<std::int64_t>(monotonic_ns) + offset_ns_) / 1000;
}

double ns_to_ms(std::uint64_t ns) {
  return static_cast<double>((ns + 500) / 1000) / 1000.0;
}

double round_ms(double value) {
  return std::round(value * 1000.0) / 1000.0;
}

std::string iso8601_utc(std::int64_t epoch_us) {
  std::string out;
  append_iso8601_utc(out, epoch_us);
  return out;
}

void append_iso8601_utc(std::string& out, std::int64_t epoch_us) {
  std::time_t secs = static_cast<std::time_t>(epoch_us / 1'000'000);
  long micros = static_cast<long>(epoch_us % 1'000'000);
  if (micros < 0) {
    micros += 1'000'000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  n += static_cast<std::size_t>(std::snprintf(buf + n, sizeof(buf) - n, ".%06ldZ", micros));
  out.append(buf, n);
}

}  // namespace pyebpf
