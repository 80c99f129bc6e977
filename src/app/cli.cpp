// SPDX-License-Identifier: Apache-2.0
#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/registry.hpp"

#ifndef PYEBPF_VERSION
#define PYEBPF_VERSION "0.0.0"
#endif

namespace pyebpf::app {

std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App cli{
      "pyebpf: eBPF profiler for running CPython processes (3.8-3.13). Attaches to live PIDs with no restart\n"
      "and no code change, and prints one JSON object per line on stdout."};
  cli.set_version_flag("--version", PYEBPF_VERSION);
  cli.get_formatter()->column_width(34);

  cli.add_option("-p,--pid", o.pids, "Host PIDs of the Python processes to profile (one or more)")
      ->required()
      ->expected(1, -1)
      ->check(CLI::PositiveNumber);
  cli.add_option("-e,--env", o.env, "Environment name, copied into every event as \"env\"")->required();
  cli.add_option("--enable", o.enable, "Trackers to run (default: all implemented): " + tracker_names_help())
      ->expected(1, -1);
  cli.add_flag("--also-stdout", o.also_stdout, "Print JSON lines on stdout even when another sink is set");
  cli.add_option("--duration", o.duration_s, "Stop after this many seconds (default: run until Ctrl-C/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  cli.add_flag("-v", o.verbosity, "More logging on stderr: -v debug, -vv trace (libbpf and verifier output)");

  auto* py_stack = cli.add_option_group("py_stack", "CPU profiler");
  py_stack->add_option("--pystack-frequency", o.pystack_frequency, "Samples per second per CPU (default 99)")
      ->check(CLI::Range(1u, 10000u));

  auto* offcpu = cli.add_option_group("offcpu", "Off-CPU: why threads sleep");
  offcpu->add_option("--offcpu-min-total-ms", o.offcpu_min_total_ms,
                     "Report sleeps (switch-out to wake-up) at least this long (default 20)")
      ->check(CLI::NonNegativeNumber);
  offcpu->add_option("--offcpu-py-min-ms", o.offcpu_py_min_ms,
                     "Attach the Python stack only to sleeps at least this long (default 0)")
      ->check(CLI::NonNegativeNumber);
  offcpu->add_flag("--offcpu-py-enable{true},!--no-offcpu-py-enable", o.offcpu_py_enable,
                   "Walk Python stacks (default true; --offcpu-py-enable false or --no-offcpu-py-enable to skip)")
      ->expected(0, 1);
  offcpu->add_option("--offcpu-max-stack-depth", o.offcpu_max_stack_depth,
                     "Kernel and user frames kept per stack (default 20, at most 64)")
      ->check(CLI::Range(1u, 64u));
  offcpu->add_option("--offcpu-aggregate", o.offcpu_aggregate_s,
                     "Aggregate in BPF: every SECONDS emit total off-CPU time and count per thread and stacks")
      ->check(CLI::PositiveNumber);
  offcpu->add_option("--offcpu-hook", o.offcpu_hook, "Tracepoint flavour: auto (tp_btf, else raw_tp), tp_btf, raw_tp")
      ->check(CLI::IsMember({"auto", "tp_btf", "raw_tp"}));
  offcpu->add_option("--offcpu-capture", o.offcpu_capture,
                     "When stacks are taken: auto (resume where the kernel has sched_exit_tp, else switch-out), "
                     "resume (only for reported sleeps), switch-out (every sleep)")
      ->check(CLI::IsMember({"auto", "resume", "switch-out"}));

  try {
    cli.parse(argc, argv);
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
