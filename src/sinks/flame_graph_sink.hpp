// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// One frame of a flame graph: a Python frame, a native user-space function,
// a kernel function, or a label (the GIL holder, "[no Python frames]").
struct FlameFrame {
  enum class Kind : std::uint8_t { Python, Native, Kernel, Label };
  Kind kind = Kind::Label;
  std::string_view name;
  std::string_view file;        // Python: the source file; Native: the module ("libc.so.6")
  std::int32_t line = 0;        // Python: the executing line
  std::int32_t first_line = 0;  // Python: the function's first line, 0 if unknown
};

// Appends the Python stack in field f of r (root first), if r holds one there.
void append_py_frames(const Record& r, FieldId f, std::vector<FlameFrame>& frames);

// A kind of flame graph and how records of one schema feed it. Trackers
// declare theirs (TrackerDescriptor::flame_graphs); kinds are never mixed in
// one graph because their weights differ.
struct FlameGraphKind {
  std::string name;                     // "CPU", "off-CPU", "GIL wait": speedscope profile names
  std::string file_suffix;              // --folded file: "" for FILE itself, else FILE.<suffix>, written only when fed
  const TableSchema* schema = nullptr;  // the records it reads (thread events)
  // Weight units: folded files hold round(weight * folded_scale) (whole
  // numbers: samples, or microseconds), speedscope and pprof weight *
  // speedscope_ms milliseconds.
  double folded_scale = 1;
  double speedscope_ms = 1;
  std::string pprof_type;       // pprof sample type, in nanoseconds: "cpu", "off_cpu", "gil_wait"
  bool counts_samples = false;  // a weight of 1 is one sample: pprof adds "samples/count" and a period
  // Appends the record's frames (root first) and returns its weight; a
  // weight <= 0 adds nothing.
  std::function<double(const Record&, std::vector<FlameFrame>&)> sample;
};

// The one frame of a sample taken while its thread had no Python frame.
inline constexpr const char* kNoPythonFramesLabel = "[no Python frames]";

// The stacks of a run, aggregated per kind and thread: what every
// flame-graph format is written from.
struct FlameGraphs {
  struct Frame {
    FlameFrame::Kind kind;
    std::string name, file;
    std::int32_t line, first_line;
  };
  struct Stack {
    std::vector<std::uint32_t> frames;  // ids, root first
    double weight = 0;
  };
  struct Profile {
    std::size_t kind = 0;
    std::uint64_t pid = 0, tid = 0;
    std::string thread, env;
    std::map<std::vector<std::uint32_t>, std::size_t> index;  // stack -> position in `stacks`
    std::vector<Stack> stacks;                                // in order of first appearance
    double total = 0;
  };
  std::vector<FlameGraphKind> kinds;
  std::vector<Frame> frames;                                                          // by id
  std::map<std::tuple<std::size_t, std::uint64_t, std::uint64_t>, Profile> profiles;  // (kind, pid, tid)
  std::vector<std::uint64_t> events;                                                  // per kind
  std::int64_t first_us = 0, last_us = 0;  // epoch µs of the earliest and latest event added (0: none)

  // Whether a file is written for kind k: the first always, the others once fed.
  bool written(std::size_t k) const { return k == 0 || events[k] != 0; }
};

// Aggregates stacks into flame graphs, written at the end of the run and
// rewritten every minute (atomically, so a killed run leaves a usable file).
//
// --folded FILE: the first kind (CPU, collapsed "root;...;leaf count") goes
// to FILE, the others to FILE with ".<suffix>" before its extension, each
// written only when such events exist. Kernel frames end in "_[k]"
// (flamegraph.pl colours those), native ones read "name [module]".
// --speedscope FILE: one speedscope file, one "sampled" profile per thread
// and kind ("MainThread (pid 1 tid 1) · CPU"), in milliseconds. Samples are
// the distinct stacks in order of first appearance with their total weight:
// left-heavy and sandwich views are exact, the time-order view is not a timeline.
// --pprof FILE: gzipped pprof profiles (sinks/pprof_format.hpp), one per
// kind, named like the folded files.
// --flamegraph FILE: one self-contained HTML page (sinks/flame_graph_html.hpp)
// with a flame graph per kind.
class FlameGraphSink : public Sink {
 public:
  struct Options {
    std::string folded_path;      // empty: none
    std::string speedscope_path;  // empty: none
    std::string title;            // speedscope file name field
    std::string exporter;         // "pyebpf 0.1.0"
    std::vector<FlameGraphKind> kinds;
    std::string pprof_path;  // empty: none
    std::string html_path;   // empty: none
  };

  explicit FlameGraphSink(Options options);
  void write(const Record& record) override;
  void flush() override;
  void begin_close(SteadyClock::time_point deadline) override;
  std::string summary() const override;

  // "prof.folded" + "off_cpu" -> "prof.off_cpu.folded".
  static std::string derived_path(const std::string& path, const std::string& suffix);
  // The text of the files, for tests.
  std::string folded_text(std::size_t kind) const;
  std::string speedscope_json() const;
  const FlameGraphs& graphs() const { return graphs_; }

 private:
  std::uint32_t frame_id(const FlameFrame& frame);
  void add(std::size_t kind, const Record& record, double weight);
  void write_files();
  // Each file to write: its path and how to make its content.
  std::vector<std::pair<std::string, std::function<std::string()>>> files() const;

  Options options_;
  FlameGraphs graphs_;
  std::unordered_map<std::string, std::uint32_t> frame_ids_;
  std::vector<FlameFrame> sample_;  // frames of the record being added, reused
  std::vector<std::uint32_t> ids_;  // their ids, reused
  std::string key_;                 // frame_id() lookups, reused
  SteadyClock::time_point last_write_;
  std::string last_error_;
  bool closed_ = false;
};

}  // namespace pyebpf::sinks
