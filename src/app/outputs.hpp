// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/options.hpp"
#include "sinks/fan_out.hpp"
#include "sinks/report.hpp"
#include "sinks/run_info.hpp"

#include "sinks/flame_graph_sink.hpp"

namespace pyebpf::sinks {
class JsonLinesSink;
class SqliteSink;
class ClickHouseSink;
}  // namespace pyebpf::sinks

namespace pyebpf::app {

// The sinks a run writes to, chosen by the flags: stdout JSON lines (unless
// another output is set, then only with --also-stdout), SQLite, ClickHouse,
// flame graphs, and the in-memory report. Created before anything attaches,
// so a bad output fails the run at once.
class Outputs {
 public:
  Outputs(const Options& options, const sinks::RunInfo& run);
  ~Outputs();

  sinks::Sink& sink() { return fan_out_; }
  // One more sink fed every event (pyebpf top's view), or no more of them.
  void add(sinks::Sink* sink) { fan_out_.add(sink); }
  void remove(sinks::Sink* sink) { fan_out_.remove(sink); }
  void flush() { fan_out_.flush(); }
  // stdout went away (`| head`): stop writing to it, keep the others.
  void drop_stdout();
  // End of run: every sink delivers what it holds, within --flush-timeout; a
  // signal on `signal_fd` (a second Ctrl-C) cuts the wait short.
  void close(int signal_fd);
  // One line per sink that has something to say (written, dropped, why).
  std::vector<std::string> summary_lines() const;
  // Stores how the run ended where runs are stored (SQLite).
  void record_end(const sinks::RunEnd& end);
  const sinks::Report* report() const { return report_ ? &report_->report : nullptr; }

 private:
  const Options& options_;
  sinks::FanOutSink fan_out_;
  std::unique_ptr<sinks::JsonLinesSink> stdout_;
  std::unique_ptr<sinks::SqliteSink> sqlite_;
  std::unique_ptr<sinks::ClickHouseSink> clickhouse_;
  std::unique_ptr<sinks::FlameGraphSink> flame_graphs_;
  std::unique_ptr<sinks::ReportSink> report_;
  std::vector<sinks::Sink*> closing_order_;
};

// The flame-graph files the flags ask for (--folded, --speedscope, --pprof,
// --flamegraph), titled after the run.
sinks::FlameGraphSink::Options flame_graph_options(const Options& options, const sinks::RunInfo& run);

// The machine's host name ("unknown" if it has none).
std::string host_name();

}  // namespace pyebpf::app
