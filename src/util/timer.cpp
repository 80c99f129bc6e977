// SPDX-License-Identifier: Apache-2.0
#include "util/timer.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <random>

#include "pyebpf/error.hpp"

namespace pyebpf {
namespace {

timespec to_timespec(std::chrono::nanoseconds ns) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(ns);
  return {static_cast<time_t>(secs.count()), static_cast<long>((ns - secs).count())};
}

void arm(const Fd& timer, std::chrono::nanoseconds first, std::chrono::nanoseconds interval) {
  // A zero `first` would disarm the timer: fire as soon as possible instead.
  itimerspec spec{to_timespec(interval), to_timespec(std::max(first, std::chrono::nanoseconds(1)))};
  if (timerfd_settime(timer.get(), 0, &spec, nullptr) != 0) throw Error(errno_text("timerfd_settime", errno));
}

}  // namespace

Fd make_timer(std::chrono::nanoseconds first, std::chrono::nanoseconds interval) {
  Fd fd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!fd) throw Error(errno_text("timerfd_create", errno));
  arm(fd, first, interval);
  return fd;
}

std::chrono::nanoseconds jittered(std::chrono::nanoseconds mean, double spread) {
  thread_local std::minstd_rand random{std::random_device{}()};
  const auto ns = static_cast<double>(mean.count());
  std::uniform_real_distribution<double> draw(ns * (1 - spread), ns * (1 + spread));
  return std::chrono::nanoseconds(static_cast<std::int64_t>(draw(random)));
}

bool expired(const Fd& timer) {
  std::uint64_t expirations = 0;
  return read(timer.get(), &expirations, sizeof(expirations)) == sizeof(expirations) && expirations > 0;
}

JitteredTimer::JitteredTimer(std::chrono::nanoseconds period, double spread)
    : period_(period), spread_(spread), fd_(make_timer(jittered(period, spread), {})) {}

bool JitteredTimer::expired() {
  if (!pyebpf::expired(fd_)) return false;
  arm(fd_, jittered(period_, spread_), {});
  return true;
}

}  // namespace pyebpf
