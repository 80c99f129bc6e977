// SPDX-License-Identifier: Apache-2.0
#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "app/registry.hpp"
#include "trackers/tcp_format.hpp"

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

}  // namespace

std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App cli{
      "pyebpf: eBPF profiler for running CPython processes (3.8-3.13). Attaches to live PIDs with no restart\n"
      "and no code change, and prints one JSON object per line on stdout."};
  cli.set_version_flag("--version", PYEBPF_VERSION);
  cli.get_formatter()->column_width(34);

  // -p and -e are required unless a subcommand (report) is given: checked after parsing.
  auto* pid_opt =
      cli.add_option("-p,--pid", o.pids, "Host PIDs of the Python processes to profile (one or more; required)")
          ->expected(1, -1)
          ->check(CLI::PositiveNumber);
  auto* env_opt = cli.add_option("-e,--env", o.env, "Environment name, copied into every event as \"env\" (required)");
  cli.add_option("--enable", o.enable, "Trackers to run (default: all implemented): " + tracker_names_help())
      ->expected(1, -1);
  cli.add_flag("--also-stdout", o.also_stdout, "Print JSON lines on stdout even when another output is set");
  cli.add_option("--duration", o.duration_s, "Stop after this many seconds (default: run until Ctrl-C/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  cli.add_flag("-v", o.verbosity, "More logging on stderr: -v debug, -vv trace (libbpf and verifier output)");

  auto* py_stack = cli.add_option_group("py_stack", "CPU profiler");
  py_stack->add_option("--pystack-frequency", o.pystack_frequency, "Samples per second per CPU (default 99)")
      ->check(CLI::Range(1u, 10000u));

  auto* gc = cli.add_option_group("gc", "Garbage-collection pauses");
  gc->add_option("--gc-min-ms", o.gc_min_ms,
                 "Report only collections at least this long, in ms (default 0: every one); filtered in BPF")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            char* end = nullptr;
            double ms = std::strtod(value.c_str(), &end);
            return end != value.c_str() && *end == '\0' && ms >= 0 ? "" : "must be 0 or more milliseconds";
          },
          "MS"));
  gc->add_option("--gc-py-enable", o.gc_py_enable,
                 "Python stack of the code that triggered each collection: true or false (default true)");
  gc->add_flag("--no-gc-py-enable{false}", o.gc_py_enable, "Same as --gc-py-enable false");
  gc->add_option("--gc-hook", o.gc_hook,
                 "auto (default: USDT probes where the build has them, else uprobes), usdt, or uprobe")
      ->check(CLI::IsMember({"auto", "usdt", "uprobe"}));

  auto* handoff = cli.add_option_group("handoff", "Request queue time in servers (gunicorn gthread, uwsgi)");
  handoff
      ->add_option("--handoff-min-ms", o.handoff_min_ms, "Emit handoff events only at or above this wait (default 0)")
      ->check(CLI::NonNegativeNumber);
  handoff->add_option("--rq-interval", o.rq_interval_s, "Seconds between request_queue summaries (default 10)")
      ->check(CLI::Range(1.0, 86400.0));
  handoff->add_flag("--disable-request-queue", o.disable_request_queue, "Do not emit request_queue summaries");

  auto* hnh = cli.add_option_group("host_net_health", "Periodic network health snapshot");
  hnh->add_option("--hnh-interval", o.hnh_interval_s,
                  "Seconds between snapshots (default 30; the first comes at start)")
      ->check(CLI::Range(1u, 86400u));
  hnh->add_option("--hnh-interface", o.hnh_interface, "Interface to report (default: the default route's)");
  hnh->add_option("--hnh-procs", o.hnh_procs,
                  "Comma-separated process names whose fd usage to report (default nginx,gunicorn)");
  hnh->add_option(
         "--hnh-netns", o.hnh_netns,
         "Network namespace: 'target' (each target's, one snapshot per namespace; default) or 'self' (pyebpf's)")
      ->check(CLI::IsMember({"target", "self"}));
  hnh->add_option("--hnh-warn-close-wait", o.hnh_warn_close_wait, "Warn above this many CLOSE_WAIT sockets (100)");
  hnh->add_option("--hnh-warn-time-wait", o.hnh_warn_time_wait_one_dst,
                  "Warn above this many TIME_WAIT sockets to one destination (15000)");
  hnh->add_option("--hnh-warn-port-util", o.hnh_warn_port_util_pct,
                  "Warn above this % of the ephemeral port range used towards one destination (60)");
  hnh->add_option("--hnh-warn-syn-sent", o.hnh_warn_syn_sent, "Warn above this many SYN_SENT sockets (30)");
  hnh->add_option("--hnh-warn-syn-recv", o.hnh_warn_syn_recv, "Warn above this many SYN_RECV sockets (100)");
  hnh->add_option("--hnh-warn-fd-util", o.hnh_warn_fd_util_pct, "Warn above this % of a process's fd limit (80)");
  hnh->add_option("--hnh-warn-conntrack", o.hnh_warn_conntrack_pct, "Warn above this % of nf_conntrack_max (80)");

  auto* gil = cli.add_option_group("gil", "GIL waits");
  gil->add_option("--gil-min-wait-ms", o.gil_min_wait_ms, "Report GIL waits at least this long (default 1.0)")
      ->check(CLI::Range(0.0, 3.6e6));
  gil->add_flag("--gil-py-enable,!--no-gil-py-enable", o.gil_py_enable,
                "Walk the waiter's and the holder's Python stacks (default true; --gil-py-enable false disables)")
      ->expected(0, 1);
  gil->add_option("--gil-py-min-ms", o.gil_py_min_ms,
                  "Walk stacks only for waits at least this long; shorter ones report empty stacks (default 0.0)")
      ->check(CLI::Range(0.0, 3.6e6));
  gil->add_option("--gil-hook", o.gil_hook,
                  "Where to measure: cond_wait (libc pthread_cond_timedwait on the GIL: probes fire only "
                  "while the GIL is contended), take_gil (CPython's take_gil symbol: every acquisition), auto "
                  "(cond_wait, else take_gil; default)")
      ->check(CLI::IsMember({"auto", "take_gil", "cond_wait"}));
  auto* out = cli.add_option_group("outputs", "Where events go (stdout JSON lines unless one of these is set)");
  out->add_option("--sqlite", o.sqlite_path, "Store events in this SQLite file (one table per metric; WAL)");
  out->add_option("--sqlite-queue-max", o.sqlite_queue_max, "Events held for SQLite before dropping (default 100000)")
      ->check(CLI::PositiveNumber);
  out->add_option("--folded", o.folded_path,
                  "Collapsed stacks for flame graphs: CPU in FILE, off-CPU/GIL time in FILE.off_cpu/.gil_wait");
  out->add_option("--speedscope", o.speedscope_path, "speedscope profile (one per thread and kind) in this file");
  out->add_flag_callback(
      "--no-report", [&o] { o.report = false; }, "No end-of-run report on stderr (the summary lines stay)");
  out->add_option("--flush-timeout", o.flush_timeout_s, "At exit, seconds to deliver what databases still hold (10)")
      ->check(CLI::NonNegativeNumber);

  auto* ch = cli.add_option_group("ClickHouse", "ClickHouse output (HTTP interface)");
  ch->add_option("--clickhouse-url", o.clickhouse_url, "e.g. http://127.0.0.1:8123 (enables the ClickHouse output)");
  ch->add_option("--clickhouse-user", o.clickhouse_user, "User (default: default)");
  ch->add_option(kPasswordFlag, o.clickhouse_password, "Password; prefer the environment variable (not shown by ps)")
      ->envname("PYEBPF_CLICKHOUSE_PASSWORD");
  ch->add_option("--clickhouse-database", o.clickhouse_database, "Database holding the ebpf_* tables (default)");
  ch->add_option("--ch-batch-size", o.ch_batch_size, "Rows per insert and table (default 5000)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
  ch->add_option("--ch-flush-interval", o.ch_flush_interval_s, "Seconds a row may wait for its batch (default 30)")
      ->check(CLI::PositiveNumber);
  ch->add_option("--ch-queue-max", o.ch_queue_max, "Events held for ClickHouse before dropping (default 100000)")
      ->check(CLI::PositiveNumber);

  auto* report = cli.add_subcommand("report", "Print the end-of-run report of a run stored with --sqlite");
  report->add_option("FILE", o.report_file, "SQLite file written by --sqlite, or saved JSON lines")->required();
  report->add_option("--run", o.report_run, "Run id in the file (default: the latest)")->check(CLI::PositiveNumber);
  auto* offcpu = cli.add_option_group("offcpu", "Off-CPU: why threads sleep");
  offcpu
      ->add_option("--offcpu-min-total-ms", o.offcpu_min_total_ms,
                   "Report sleeps (switch-out to wake-up) at least this long (default 20)")
      ->check(CLI::NonNegativeNumber);
  offcpu
      ->add_option("--offcpu-py-min-ms", o.offcpu_py_min_ms,
                   "Attach the Python stack only to sleeps at least this long (default 0)")
      ->check(CLI::NonNegativeNumber);
  offcpu
      ->add_flag("--offcpu-py-enable{true},!--no-offcpu-py-enable", o.offcpu_py_enable,
                 "Walk Python stacks (default true; --offcpu-py-enable false or --no-offcpu-py-enable to skip)")
      ->expected(0, 1);
  offcpu
      ->add_option("--offcpu-max-stack-depth", o.offcpu_max_stack_depth,
                   "Kernel and user frames kept per stack (default 20, at most 64)")
      ->check(CLI::Range(1u, 64u));
  offcpu
      ->add_option("--offcpu-aggregate", o.offcpu_aggregate_s,
                   "Aggregate in BPF: every SECONDS emit total off-CPU time and count per thread and stacks")
      ->check(CLI::PositiveNumber);
  offcpu->add_option("--offcpu-hook", o.offcpu_hook, "Tracepoint flavour: auto (tp_btf, else raw_tp), tp_btf, raw_tp")
      ->check(CLI::IsMember({"auto", "tp_btf", "raw_tp"}));
  offcpu
      ->add_option("--offcpu-capture", o.offcpu_capture,
                   "When stacks are taken: auto (resume where the kernel has sched_exit_tp, else switch-out), "
                   "resume (only for reported sleeps), switch-out (every sleep)")
      ->check(CLI::IsMember({"auto", "resume", "switch-out"}));

  auto* tcp = cli.add_option_group("tcp", "tcp_connect, tcp_accept, tcp_loss");
  tcp->add_option("--net-scope", o.net_scope,
                  "Sockets reported: 'targets' (those the target processes connected, accepted or listen on; "
                  "default) or 'host' (every TCP socket; with tcp_accept this hooks sys_exit, which makes every "
                  "system call on the host slower: +16 % for a 1-byte write(2) here)")
      ->check(CLI::IsMember({"targets", "host"}));
  auto* tcp_loss = cli.add_option_group("tcp_loss", "TCP retransmits, resets, zero windows");
  tcp_loss
      ->add_option("--loss-filter-ip", o.loss_filter_ip, "Only report events with this IPv4/IPv6 address at either end")
      ->check([](const std::string& ip) {
        return trackers::tcp::parse_filter_ip(ip) ? std::string() : "not an IPv4 or IPv6 address: " + ip;
      });
  tcp_loss->add_option(
      "--loss-rate-limit", o.loss_rate_limit,
      "Most tcp_loss events per second; the rest are counted, not printed (default 1000, 0: no limit)");

  try {
    cli.parse(argc, argv);
    o.command_line = redact_argv(argc, argv);  // after parsing: it overwrites the password in argv
    if (report->parsed()) {
      o.command = Options::Command::Report;
    } else {
      if (pid_opt->count() == 0) throw CLI::RequiredError(pid_opt->get_name());
      if (env_opt->count() == 0) throw CLI::RequiredError(env_opt->get_name());
    }
  } catch (const CLI::CallForHelp& e) {
    exit_code = cli.exit(e);
    return std::nullopt;
  } catch (const CLI::CallForVersion& e) {
    exit_code = cli.exit(e);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "pyebpf: error: %s (see pyebpf --help)\n", e.what());
    exit_code = 2;
    return std::nullopt;
  }
  return o;
}

}  // namespace pyebpf::app
