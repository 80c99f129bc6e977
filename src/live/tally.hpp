// SPDX-License-Identifier: Apache-2.0
// What `pyebpf top` shows, counted from the records of one refresh interval:
// Python functions by CPU samples (self and total), per thread the share of
// the interval spent on CPU and in each kind of wait its trackers measure,
// and pauses (GC, request queue) with their distribution. Trackers feed it
// through their descriptor's `top` function; the view renders Windows.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sinks/record.hpp"
#include "sinks/report_text.hpp"

namespace pyebpf::live {

// One Python function: by name, file and first line, whatever line ran.
struct FunctionKey {
  std::string function, file;
  std::int32_t first_line = 0;
  auto operator<=>(const FunctionKey&) const = default;
};

struct FunctionTime {
  double self_ms = 0;   // on top of the stack
  double total_ms = 0;  // anywhere in it (once per sample)
};

// A thread's time in one kind of wait ("GIL", "off-CPU", "GC"), and why, by
// the time each reason took.
struct WaitTime {
  double ms = 0;
  std::map<std::string, double, std::less<>> reasons;
  // The reason with the most time; "" if none was given.
  std::string main_reason() const;
};

struct ThreadTime {
  std::string name;
  std::uint32_t pid = 0;
  double cpu_ms = 0;
  std::map<FunctionKey, FunctionTime> functions;       // of its CPU samples
  std::map<std::string, WaitTime, std::less<>> waits;  // by kind
};

// Everything counted over some span of time; bounded (tally.cpp) so that a
// view left open for days stays small.
struct Window {
  double seconds = 0;
  double cpu_ms = 0;  // of every sample
  std::uint64_t samples = 0;
  std::map<std::uint32_t, ThreadTime> threads;                             // by host tid
  std::vector<std::string> wait_kinds;                                     // in the order first seen
  std::map<std::string, sinks::report::Distribution, std::less<>> pauses;  // ms, by kind
  std::vector<std::string> pause_kinds;                                    // in the order first seen
  std::uint64_t lost = 0;                                                  // events lost (rings full)
};

// Where trackers put what a record adds to the view.
class Tally {
 public:
  // A CPU sample of `r`'s thread, worth `ms` of CPU, with Python stack field `stack`.
  void cpu_sample(const sinks::Record& r, sinks::FieldId stack, double ms);
  // `ms` of `r`'s thread spent in a wait of kind `kind`, for `reason` ("" if unknown).
  void wait(const sinks::Record& r, std::string_view kind, double ms, std::string_view reason = {});
  // A pause of kind `kind` (a GC collection, a request's time in a queue).
  void pause(std::string_view kind, double ms);

  // Ends the interval, `seconds` long, with `lost` events lost since the
  // start: returns it, and starts the next. since_start() includes it.
  Window roll(double seconds, std::uint64_t lost);
  const Window& since_start() const { return total_; }

 private:
  template <typename Add>
  void both(Add add) {
    add(interval_);
    add(total_);
  }
  Window interval_, total_;
};

}  // namespace pyebpf::live
