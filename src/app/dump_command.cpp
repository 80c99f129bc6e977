// SPDX-License-Identifier: Apache-2.0
#include "app/dump_command.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>

#include "app/name_pattern.hpp"
#include "app/system_checks.hpp"
#include "app/targets.hpp"
#include "bpf_runtime/libbpf_log.hpp"
#include "bpf_runtime/shared_maps.hpp"
#include "dump/dump_output.hpp"
#include "dump/threads.hpp"
#include "native/kallsyms.hpp"
#include "pyebpf/error.hpp"
#include "sinks/json_lines_sink.hpp"
#include "util/files.hpp"

namespace pyebpf::app {
namespace {

// The processes to dump: -p PIDs and -n matches, then (unless --no-children)
// their descendants. Only -p PIDs must be CPython; descendants and matches
// that are not are skipped.
std::vector<pid_t> wanted_pids(const Options& options) {
  std::vector<pid_t> pids = options.pids;
  if (!options.name_pattern.empty()) {
    NamePattern name(options.name_pattern);
    for (pid_t pid : name.scan(self_and_ancestors()))
      if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  }
  if (!options.follow_children) return pids;
  std::deque<pid_t> todo(pids.begin(), pids.end());
  while (!todo.empty()) {
    pid_t pid = todo.front();
    todo.pop_front();
    for (pid_t child : children_of(pid)) {
      if (std::find(pids.begin(), pids.end(), child) != pids.end()) continue;
      pids.push_back(child);
      todo.push_back(child);
    }
  }
  return pids;
}

}  // namespace

int print_thread_dump(const Options& options) {
  check_system();
  bpf::install_libbpf_logger();
  const auto& table = python::OffsetsTable::embedded();
  Targets targets;
  std::vector<trackers::Target> prepared;
  std::vector<Error> refused;
  for (pid_t pid : wanted_pids(options)) {
    const bool named = std::find(options.pids.begin(), options.pids.end(), pid) != options.pids.end();
    try {
      prepared.push_back(targets.prepare(pid, table));
    } catch (const Error& e) {
      if (named) refused.push_back(e);
      spdlog::debug("pid {} is not dumped: {}", pid, e.what());
    }
  }
  if (prepared.empty()) {
    if (!refused.empty()) throw refused.front();
    throw Error("no process matches -n '" + options.name_pattern + "'",
                "check it with pgrep -af '" + options.name_pattern + "'");
  }
  // The others are dumped; each -p PID that cannot be says why, once.
  for (const auto& e : refused) spdlog::warn("not dumped: {}", e.what());
  bpf::SharedMaps shared;
  std::vector<const trackers::Target*> dumped;
  for (auto& t : prepared) {
    Target& added = targets.add(std::move(t));
    shared.add_process(added.pid, added.python->bpf_config());
  }
  for (auto& t : targets.all()) dumped.push_back(&t);
  const auto kallsyms = native::Kallsyms::load();
  dump::Dumper dumper(shared, kallsyms);
  const auto processes = dumper.dump(dumped);
  WallClock clock;
  if (!options.dump_json) {
    const std::string text = dump::dump_text(processes, clock);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  sinks::JsonLinesSink out(STDOUT_FILENO);
  sinks::Record record(dump::thread_dump_schema());
  for (const auto& p : processes) {
    for (const auto& problem : p.problems) spdlog::warn("pid {}: {}", p.pid, problem);
    for (const auto& t : p.threads) {
      dump::fill_record(record, p, t, options.env, clock);
      out.write(record);
    }
  }
  out.flush();
  return 0;
}

}  // namespace pyebpf::app
