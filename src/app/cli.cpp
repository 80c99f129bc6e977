// SPDX-License-Identifier: Apache-2.0
#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "app/registry.hpp"
#include "util/flag_rules.hpp"

#ifndef PYEBPF_VERSION
#define PYEBPF_VERSION "0.0.0"
#endif

namespace pyebpf::app {
namespace {

constexpr const char* kPasswordFlag = "--clickhouse-password";

// argv joined for the record, with the ClickHouse password replaced; and the
// password overwritten in argv itself so it does not stay readable in
// /proc/PID/cmdline (ps) for the whole run.
std::string redact_argv(int argc, char** argv) {
  std::string out;
  const std::size_t flag_len = std::strlen(kPasswordFlag);
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    bool secret = i > 0 && std::strcmp(argv[i - 1], kPasswordFlag) == 0;
    if (arg.rfind(std::string(kPasswordFlag) + "=", 0) == 0) {
      std::memset(argv[i] + flag_len + 1, 'x', arg.size() - flag_len - 1);
      arg = std::string(kPasswordFlag) + "=***";
    } else if (secret) {
      std::memset(argv[i], 'x', arg.size());
      arg = "***";
    }
    out += (i ? " " : "") + arg;
  }
  return out;
}

// -p, -n and -e: which of them are required depends on the command, so they
// are checked after parsing (chosen_command).
struct Required {
  CLI::Option* pid;
  CLI::Option* name;
  CLI::Option* env;
};

// What to profile and how long: the options before the trackers' own.
Required add_run_options(CLI::App& cli, Options& o) {
  auto* pid_opt = flags::check_pid(
      cli.add_option("-p,--pid", o.pids,
                     "Host PIDs of the Python processes to profile, with their descendants (one or more)")
          ->expected(1, -1));
  auto* name_opt = cli.add_option("-n,--name", o.name_pattern,
                                  "Also profile processes whose command line matches this extended regex, running "
                                  "now or started later (as pgrep -f)");
  cli.add_flag_callback(
      "--no-children", [&o] { o.follow_children = false; },
      "Do not follow the processes the targets fork or spawn (only -p PIDs and --name matches)");
  flags::check(cli.add_option("--max-targets", o.max_targets,
                              "Most processes traced at once; more are refused and counted (256)"),
               flags::whole(1, 4096, "processes", "64"));
  auto* env_opt = cli.add_option("-e,--env", o.env, "Environment name, copied into every event as \"env\" (required)");
  cli.add_option("--enable", o.enable, "Trackers to run (default: all implemented): " + tracker_names_help())
      ->expected(1, -1);
  cli.add_flag("--also-stdout", o.also_stdout, "Print JSON lines on stdout even when another output is set");
  flags::check(
      cli.add_option("--duration", o.duration_s, "Stop after this many seconds (default: run until Ctrl-C/SIGTERM)"),
      flags::above_zero("seconds", "60"));
  cli.add_flag("-v", o.verbosity, "More logging on stderr: -v debug, -vv trace (libbpf and verifier output)");
  return {pid_opt, name_opt, env_opt};
}

// The flame-graph outputs' help names the kinds the trackers make.
struct FlameGraphHelp {
  std::string files, kinds, pprof, html;
};

FlameGraphHelp flame_graph_help(const TrackerOptionsMap& trackers) {
  FlameGraphHelp h{flame_graph_kinds_help(trackers, true), flame_graph_kinds_help(trackers, false), {}, {}};
  h.pprof = "Gzipped pprof profiles: " + h.files;
  h.html = "Self-contained HTML flame graphs in this file, one per kind: " + h.kinds;
  return h;
}

void add_output_options(CLI::App& cli, Options& o, const FlameGraphHelp& help) {
  auto* out = cli.add_option_group("outputs", "Where events go (stdout JSON lines unless one of these is set)");
  out->add_option("--sqlite", o.sqlite_path, "Store events in this SQLite file (one table per metric; WAL)");
  flags::check(out->add_option("--sqlite-queue-max", o.sqlite_queue_max,
                               "Events held for SQLite before dropping (default 100000)"),
               flags::whole(1, 0, "events", "100000"));
  out->add_option("--folded", o.folded_path, "Collapsed stacks for flame graphs: " + help.files);
  out->add_option("--speedscope", o.speedscope_path,
                  "speedscope profile (one per thread and kind: " + help.kinds + ") in this file");
  out->add_option("--pprof", o.pprof_path, help.pprof);
  out->add_option("--flamegraph", o.html_path, help.html);
  out->add_flag_callback(
      "--no-report", [&o] { o.report = false; }, "No end-of-run report on stderr (the summary lines stay)");
  flags::check(out->add_option("--flush-timeout", o.flush_timeout_s,
                               "At exit, seconds to deliver what databases still hold (10)"),
               flags::zero_or_more("seconds", "10"));
}

void add_clickhouse_options(CLI::App& cli, Options& o) {
  auto* ch = cli.add_option_group("ClickHouse", "ClickHouse output (HTTP interface)");
  flags::check_http_url(ch->add_option("--clickhouse-url", o.clickhouse_url,
                                       "e.g. http://127.0.0.1:8123 (enables the ClickHouse output)"));
  ch->add_option("--clickhouse-user", o.clickhouse_user, "User (default: default)");
  ch->add_option(kPasswordFlag, o.clickhouse_password, "Password; prefer the environment variable (not shown by ps)")
      ->envname("PYEBPF_CLICKHOUSE_PASSWORD");
  ch->add_option("--clickhouse-database", o.clickhouse_database, "Database holding the ebpf_* tables (default)");
  flags::check(ch->add_option("--ch-batch-size", o.ch_batch_size, "Rows per insert and table (default 5000)"),
               flags::whole(1, 1000000, "rows", "5000"));
  flags::check(
      ch->add_option("--ch-flush-interval", o.ch_flush_interval_s, "Seconds a row may wait for its batch (default 30)"),
      flags::above_zero("seconds", "30"));
  flags::check(
      ch->add_option("--ch-queue-max", o.ch_queue_max, "Events held for ClickHouse before dropping (default 100000)"),
      flags::whole(1, 0, "events", "100000"));
}

CLI::App* add_report_command(CLI::App& cli, Options& o, const FlameGraphHelp& help) {
  auto* report = cli.add_subcommand("report", "Print the end-of-run report of a run stored with --sqlite");
  report->add_option("FILE", o.report_file, "SQLite file written by --sqlite, or saved JSON lines")->required();
  flags::check(report->add_option("--run", o.report_run, "Run id in the file (default: the latest)"),
               flags::whole(1, 0, "", "2"));
  // Flame-graph files from the stored events instead of the printed report.
  report->add_option("--folded", o.folded_path, "Write collapsed stacks (as pyebpf --folded) instead of the report");
  report->add_option("--speedscope", o.speedscope_path, "Write a speedscope profile instead of the report");
  report->add_option("--pprof", o.pprof_path, help.pprof);
  report->add_option("--flamegraph", o.html_path, help.html);
  return report;
}

CLI::App* add_dump_command(CLI::App& cli, Options& o) {
  auto* dump = cli.add_subcommand(
      "dump",
      "Every thread of the targets now: state and for how long, what it waits on (GIL, lock, socket, sleep...), "
      "kernel, native and Python stacks, deadlocks. Give -p/-n after it; the targets are not stopped");
  dump->fallthrough();
  dump->add_flag("--json", o.dump_json, "One JSON object per thread (metric thread_dump) instead of a table");
  return dump;
}

CLI::App* add_top_command(CLI::App& cli, Options& o) {
  auto* top = cli.add_subcommand(
      "top",
      "A live full-screen view, refreshed every second: top Python functions, and per thread its CPU, GIL, "
      "off-CPU and GC time. Give -p/-n and the usual flags after it (-e defaults to \"top\"); outputs such as "
      "--sqlite are written as in a normal run. Plain-text snapshots when stdout is not a terminal");
  top->fallthrough();
  flags::check(top->add_option("--refresh", o.top_refresh_s, "Seconds between refreshes (default 1)"),
               flags::between(0.1, 60, "seconds", "2"));
  return top;
}

// The command given. -p (or -n) and -e are required unless a subcommand is
// given (dump and top need -p or -n, not -e; report neither); a missing one
// throws CLI::RequiredError.
Options::Command chosen_command(const CLI::App& report, const CLI::App& dump, const CLI::App& top,
                                const Required& required) {
  if (report.parsed()) return Options::Command::Report;
  if (required.pid->count() == 0 && required.name->count() == 0) throw CLI::RequiredError("--pid or --name");
  if (dump.parsed()) return Options::Command::Dump;
  if (top.parsed()) return Options::Command::Top;
  if (required.env->count() == 0) throw CLI::RequiredError(required.env->get_name());
  return Options::Command::Profile;
}

}  // namespace

std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App cli{
      "pyebpf: eBPF profiler for running CPython processes (3.8-3.15). Attaches to live PIDs with no restart\n"
      "and no code change, and prints one JSON object per line on stdout."};
  cli.set_version_flag("--version", PYEBPF_VERSION);
  cli.get_formatter()->column_width(34);

  const Required required = add_run_options(cli, o);
  o.trackers = add_tracker_options(cli);
  const FlameGraphHelp help = flame_graph_help(o.trackers);
  add_output_options(cli, o, help);
  add_clickhouse_options(cli, o);
  const CLI::App* report = add_report_command(cli, o, help);
  const CLI::App* dump = add_dump_command(cli, o);
  const CLI::App* top = add_top_command(cli, o);

  try {
    cli.parse(argc, argv);
    o.command_line = redact_argv(argc, argv);  // after parsing: it overwrites the password in argv
    o.command = chosen_command(*report, *dump, *top, required);
    if (o.command == Options::Command::Top) {
      if (o.env.empty()) o.env = "top";
      if (o.also_stdout)
        throw CLI::ValidationError("--also-stdout", "pyebpf top draws on stdout; use --sqlite or a file output");
    }
  } catch (const CLI::CallForHelp& e) {
    exit_code = cli.exit(e);
    return std::nullopt;
  } catch (const CLI::CallForVersion& e) {
    exit_code = cli.exit(e);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "pyebpf: error: %s (see pyebpf --help)\n", flags::describe(e).c_str());
    exit_code = 2;
    return std::nullopt;
  }
  return o;
}

}  // namespace pyebpf::app
