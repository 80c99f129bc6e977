// SPDX-License-Identifier: Apache-2.0
#include "app/outputs.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/ranges.h>

#include "app/registry.hpp"

#include "sinks/clickhouse_sink.hpp"
#include "sinks/flame_graph_sink.hpp"
#include "sinks/json_lines_sink.hpp"
#include "sinks/sqlite_sink.hpp"

#ifndef PYEBPF_VERSION
#define PYEBPF_VERSION "0.0.0"
#endif

namespace pyebpf::app {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

sinks::FlameGraphSink::Options flame_graph_options(const Options& o, const sinks::RunInfo& run) {
  return {.folded_path = o.folded_path,
          .speedscope_path = o.speedscope_path,
          .title = fmt::format("pyebpf {} pid {} on {}", run.env, fmt::join(run.pids, ","), run.host),
          .exporter = std::string("pyebpf ") + PYEBPF_VERSION,
          .kinds = flame_graph_kinds(o.trackers),
          .pprof_path = o.pprof_path,
          .html_path = o.html_path};
}

Outputs::Outputs(const Options& o, const sinks::RunInfo& run) : options_(o) {
  const bool flame_graphs =
      !o.folded_path.empty() || !o.speedscope_path.empty() || !o.pprof_path.empty() || !o.html_path.empty();
  bool other = !o.sqlite_path.empty() || !o.clickhouse_url.empty() || flame_graphs;
  // pyebpf top draws on stdout: JSON lines would interleave with the view.
  if ((!other || o.also_stdout) && o.command != Options::Command::Top) {
    stdout_ = std::make_unique<sinks::JsonLinesSink>(STDOUT_FILENO);
    fan_out_.add(stdout_.get());
  }
  if (o.report) {
    report_ = std::make_unique<sinks::ReportSink>(make_report());
    fan_out_.add(report_.get());
  }
  if (flame_graphs) {
    flame_graphs_ = std::make_unique<sinks::FlameGraphSink>(flame_graph_options(o, run));
    fan_out_.add(flame_graphs_.get());
  }
  if (!o.clickhouse_url.empty()) {
    clickhouse_ = std::make_unique<sinks::ClickHouseSink>(
        sinks::ClickHouseOptions{o.clickhouse_url, o.clickhouse_user, o.clickhouse_password, o.clickhouse_database,
                                 o.ch_batch_size, o.ch_flush_interval_s, o.ch_queue_max},
        run.host, all_schemas());
    fan_out_.add(clickhouse_.get());
  }
  if (!o.sqlite_path.empty()) {
    sqlite_ = std::make_unique<sinks::SqliteSink>(o.sqlite_path, run, o.sqlite_queue_max);
    fan_out_.add(sqlite_.get());
  }
  // SQLite last: it records the run's end, including what ClickHouse did.
  for (sinks::Sink* s :
       std::initializer_list<sinks::Sink*>{stdout_.get(), flame_graphs_.get(), clickhouse_.get(), sqlite_.get()}) {
    if (s) closing_order_.push_back(s);
  }
}

Outputs::~Outputs() = default;

void Outputs::drop_stdout() {
  if (!stdout_) return;
  fan_out_.remove(stdout_.get());
  closing_order_.erase(std::remove(closing_order_.begin(), closing_order_.end(), stdout_.get()), closing_order_.end());
}

void Outputs::close(int signal_fd) {
  using namespace std::chrono_literals;
  auto deadline = sinks::SteadyClock::now() + std::chrono::duration_cast<sinks::SteadyClock::duration>(
                                                  std::chrono::duration<double>(options_.flush_timeout_s));
  auto begin_all = [&] {
    for (sinks::Sink* s : closing_order_) {
      try {
        s->begin_close(deadline);
      } catch (const sinks::OutputClosed&) {
        // stdout went away at the very end: nothing more to write there.
      }
    }
  };
  // All at once: the databases deliver in parallel, each within the deadline.
  begin_all();
  bool cut_short = false;
  for (sinks::Sink* s : closing_order_) {
    // Wait in slices, so a second Ctrl-C can give up on what is left.
    while (!s->wait_closed(sinks::SteadyClock::now() + 100ms)) {
      pollfd p{signal_fd, POLLIN, 0};
      if (!cut_short && signal_fd >= 0 && poll(&p, 1, 0) > 0) {
        signalfd_siginfo info{};
        if (read(signal_fd, &info, sizeof(info)) > 0) {
          spdlog::warn("second signal: not waiting for queued events to be delivered");
          cut_short = true;
          deadline = sinks::SteadyClock::now();
          begin_all();
        }
      }
      if (sinks::SteadyClock::now() > deadline + 5s) {
        spdlog::error("a sink did not finish 5 s after the flush timeout; going on without it");
        break;
      }
    }
  }
}

std::vector<std::string> Outputs::summary_lines() const {
  std::vector<std::string> lines;
  for (const sinks::Sink* s :
       std::initializer_list<const sinks::Sink*>{flame_graphs_.get(), clickhouse_.get(), sqlite_.get()}) {
    if (!s) continue;
    if (auto line = s->summary(); !line.empty()) lines.push_back(line);
  }
  return lines;
}

void Outputs::record_end(const sinks::RunEnd& end) {
  if (sqlite_) sqlite_->record_end(end);
}

}  // namespace pyebpf::app
