// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// Aggregates stacks into flame graphs, written at the end of the run and
// rewritten every minute (atomically, so a killed run leaves a usable file).
//
// Three kinds, never mixed in one graph because their weights differ:
//   CPU      py_stack events; weight = samples (folded) or
//            samples / --pystack-frequency seconds (speedscope, in ms)
//   off-CPU  off_cpu events; weight = off_cpu_ms; frames = Python stack, then
//            the kernel stack with "_[k]" appended (flamegraph.pl colours those)
//   GIL wait gil_wait events; weight = duration_ms; frames = the waiter's
//            Python stack, then "GIL held by <holder thread>"
//
// --folded FILE: FILE holds CPU (collapsed "root;...;leaf count"); the time
// kinds go to FILE with ".off_cpu"/".gil_wait" before its extension, weights
// in microseconds, each written only when such events exist.
// --speedscope FILE: one speedscope file, one "sampled" profile per thread
// and kind ("MainThread (pid 1 tid 1) · CPU"), in milliseconds. Samples are
// the distinct stacks in order of first appearance with their total weight:
// left-heavy and sandwich views are exact, the time-order view is not a timeline.
// The one frame of a sample taken while its thread had no Python frame.
inline constexpr const char* kNoPythonFramesLabel = "[no Python frames]";

class FlameGraphSink : public Sink {
 public:
  struct Options {
    std::string folded_path;      // empty: none
    std::string speedscope_path;  // empty: none
    unsigned pystack_frequency = 99;
    std::string title;     // speedscope file name field
    std::string exporter;  // "pyebpf 0.1.0"
  };
  enum Kind { Cpu = 0, OffCpu, Gil, kKinds };

  explicit FlameGraphSink(Options options);
  void write(const Event& event) override;
  void flush() override;
  void begin_close(SteadyClock::time_point deadline) override;
  std::string summary() const override;

  // "prof.folded" + "off_cpu" -> "prof.off_cpu.folded".
  static std::string derived_path(const std::string& path, const std::string& suffix);
  // The text of the files, for tests.
  std::string folded_text(Kind kind) const;
  std::string speedscope_json() const;

 private:
  struct Profile {
    Kind kind;
    long pid = 0, tid = 0;
    std::string thread;
    std::map<std::vector<std::uint32_t>, std::size_t> index;  // stack -> position in `stacks`
    std::vector<std::pair<std::vector<std::uint32_t>, double>> stacks;
    double total = 0;
  };
  std::uint32_t frame_id(const std::string& name);
  void add(Kind kind, const Event& event, const std::vector<std::string>& stack, double weight);
  void write_files();

  Options options_;
  std::unordered_map<std::string, std::uint32_t> frame_ids_;
  std::vector<std::string> frames_;
  std::map<std::tuple<int, long, long>, Profile> profiles_;  // (kind, pid, tid)
  std::uint64_t events_[kKinds] = {};
  SteadyClock::time_point last_write_;
  std::string last_error_;
  bool closed_ = false;
};

}  // namespace pyebpf::sinks
