// SPDX-License-Identifier: Apache-2.0
// Offers synthetic py_stack events (the shape and size of real ones) to one
// sink at a fixed rate, the way the runner does (a batch, then flush(), every
// millisecond), then closes it and prints one JSON line: what was offered,
// delivered and dropped, how long the drain took after the offer ended, and
// the process CPU time (the caller's thread plus the sink's writer thread).
//
//   bench_sinks {none|stdout|sqlite|clickhouse} RATE SECONDS [TARGET]
//   TARGET: the SQLite file, or the ClickHouse URL.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "app/registry.hpp"
#include "sinks/clickhouse_sink.hpp"
#include "sinks/json_lines_sink.hpp"
#include "sinks/sqlite_sink.hpp"
#include "trackers/py_stack/py_stack_events.hpp"

using namespace pyebpf::sinks;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// A py_stack record as the decoder fills it: 8 frames, named threads.
Record make_event(long i) {
  namespace tf = thread_fields;
  static const std::pair<const char*, const char*> frames[] = {
      {"Thread._bootstrap", "/usr/lib/python3.11/threading.py"},
      {"Thread._bootstrap_inner", "/usr/lib/python3.11/threading.py"},
      {"Thread.run", "/usr/lib/python3.11/threading.py"},
      {"_worker", "/usr/lib/python3.11/concurrent/futures/thread.py"},
      {"_WorkItem.run", "/usr/lib/python3.11/concurrent/futures/thread.py"},
      {"handle_request", "/srv/app/views.py"},
      {"render_template", "/srv/app/templates.py"},
      {"Environment.render", "/srv/venv/lib/python3.11/site-packages/jinja2/environment.py"},
  };
  static const int lines[] = {995, 1038, 975, 83, 58, 42, 120, 1301};
  const auto& s = pyebpf::trackers::py_stack_schema();
  Record r(s);
  std::int64_t us = 1795968883529837LL + i * 100;
  r.set_text(tf::env, "bench");
  r.set_time(tf::ts, us);
  r.set_int(tf::ts_us, us);
  r.set_uint(tf::pid, 4242);
  r.set_uint(tf::tid, static_cast<std::uint64_t>(4243 + i % 8));
  r.set_uint(tf::container_pid, 4242);
  r.set_uint(tf::container_tid, static_cast<std::uint64_t>(4243 + i % 8));
  r.set_text(tf::comm, "gunicorn");
  r.set_text(tf::thread_name, "ThreadPoolExecutor-0_" + std::to_string(i % 8));
  r.begin_py_stack(s.stack);
  for (int f = 0; f < 8; ++f) r.add_py_frame({frames[f].first, frames[f].second, lines[f]});
  r.set_uint(s.stack_depth, 8);
  r.set_text(s.leaf_func, "Environment.render");
  r.set_text(s.leaf_file, "/srv/venv/lib/python3.11/site-packages/jinja2/environment.py");
  r.set_int(s.leaf_line, 1301);
  r.set_bool(s.truncated, false);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s {none|stdout|sqlite|clickhouse} RATE SECONDS [TARGET]\n", argv[0]);
    return 2;
  }
  std::string kind = argv[1];
  double rate = std::stod(argv[2]), seconds = std::stod(argv[3]);
  std::string target = argc > 4 ? argv[4] : "";

  std::unique_ptr<Sink> sink;
  AsyncSink* async = nullptr;
  if (kind == "stdout") {
    sink = std::make_unique<JsonLinesSink>(STDOUT_FILENO);
  } else if (kind == "sqlite") {
    auto s = std::make_unique<SqliteSink>(target, RunInfo{"bench", "host", "0", "bench", {1}, 0}, 100000);
    async = s.get();
    sink = std::move(s);
  } else if (kind == "clickhouse") {
    auto s = std::make_unique<ClickHouseSink>(ClickHouseOptions{target, "default", "", "default", 5000, 30, 100000},
                                              "bench-host", pyebpf::app::all_schemas());
    async = s.get();
    sink = std::move(s);
  } else if (kind != "none") {
    std::fprintf(stderr, "unknown sink %s\n", kind.c_str());
    return 2;
  }

  // The events are made before timing: the runner's cost of building them is
  // the trackers', not the sinks'.
  const long total = static_cast<long>(rate * seconds);
  std::vector<Record> events;
  events.reserve(static_cast<std::size_t>(total));
  for (long i = 0; i < total; ++i) events.push_back(make_event(i));

  double cpu0 = cpu_seconds();
  auto start = Clock::now();
  long sent = 0;
  while (sent < total) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    long due = std::min(total, static_cast<long>(elapsed * rate) + 1);
    for (; sent < due; ++sent) {
      if (sink) sink->write(events[static_cast<std::size_t>(sent)]);
    }
    if (sink) sink->flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto offered = Clock::now();
  if (sink) {
    sink->begin_close(Clock::now() + std::chrono::seconds(120));
    while (!sink->wait_closed(Clock::now() + std::chrono::milliseconds(100))) {
    }
  }
  auto done = Clock::now();
  double cpu = cpu_seconds() - cpu0;
  AsyncSink::Counts c{};
  if (async) {
    c = async->counts();
  } else {
    c.received = c.delivered = static_cast<std::uint64_t>(total);
  }
  std::fprintf(stderr,
               "{\"sink\":\"%s\",\"rate\":%.0f,\"offered\":%ld,\"delivered\":%llu,\"dropped\":%llu,"
               "\"offer_s\":%.3f,\"drain_s\":%.3f,\"cpu_s\":%.3f,\"cpu_ms_per_10k\":%.2f}\n",
               kind.c_str(), rate, total, static_cast<unsigned long long>(c.delivered),
               static_cast<unsigned long long>(c.dropped_full + c.dropped_at_exit + c.rejected),
               std::chrono::duration<double>(offered - start).count(),
               std::chrono::duration<double>(done - offered).count(), cpu, total ? cpu * 1e3 * 1e4 / total : 0.0);
  return 0;
}
