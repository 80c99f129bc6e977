// SPDX-License-Identifier: Apache-2.0
#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/registry.hpp"
#include "trackers/tcp_format.hpp"

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

  auto* tcp = cli.add_option_group("tcp", "tcp_connect, tcp_accept, tcp_loss");
  tcp->add_option("--net-scope", o.net_scope,
                  "Sockets reported: 'targets' (those the target processes connected, accepted or listen on; "
                  "default) or 'host' (every TCP socket)")
      ->check(CLI::IsMember({"targets", "host"}));
  auto* tcp_loss = cli.add_option_group("tcp_loss", "TCP retransmits, resets, zero windows");
  tcp_loss->add_option("--loss-filter-ip", o.loss_filter_ip, "Only report events with this IPv4/IPv6 address at either end")
      ->check([](const std::string& ip) {
        return trackers::tcp::parse_filter_ip(ip) ? std::string() : "not an IPv4 or IPv6 address: " + ip;
      });
  tcp_loss->add_option("--loss-rate-limit", o.loss_rate_limit,
                       "Most tcp_loss events per second; the rest are counted, not printed (default 1000, 0: no limit)");

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
