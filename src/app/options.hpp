// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace pyebpf::app {

// Everything the command line sets. Defaults match the original tool's.
struct Options {
  enum class Command { Profile, Report };
  Command command = Command::Profile;

  std::vector<pid_t> pids;
  std::string env;
  std::vector<std::string> enable;  // tracker names as given (empty: every implemented tracker)
  bool also_stdout = false;
  double duration_s = 0;     // 0: until Ctrl-C / SIGTERM / no target left
  int verbosity = 0;         // -v debug, -vv trace (libbpf and verifier output)
  std::string command_line;  // argv as given, secrets redacted (stored with --sqlite runs)

  unsigned pystack_frequency = 99;  // Hz

  double gc_min_ms = 0.0;        // gc: collections shorter than this are dropped in BPF
  bool gc_py_enable = true;      // gc: Python stack of the code that triggered the collection
  std::string gc_hook = "auto";  // gc: auto | usdt | uprobe

  // handoff
  double handoff_min_ms = 0.0;  // pickups below this are not emitted (still counted in request_queue)
  double rq_interval_s = 10.0;  // request_queue summary period
  bool disable_request_queue = false;

  // host_net_health
  unsigned hnh_interval_s = 30;
  std::string hnh_interface;  // empty: the default route's interface
  std::string hnh_procs = "nginx,gunicorn";
  std::string hnh_netns = "target";  // "target": each target's network namespace; "self": pyebpf's own
  // Warning thresholds (strict >), the original tool's values.
  unsigned hnh_warn_close_wait = 100;
  unsigned hnh_warn_time_wait_one_dst = 15000;
  double hnh_warn_port_util_pct = 60.0;
  unsigned hnh_warn_syn_sent = 30;
  unsigned hnh_warn_syn_recv = 100;
  double hnh_warn_fd_util_pct = 80.0;
  double hnh_warn_conntrack_pct = 80.0;

  // gil
  double gil_min_wait_ms = 1.0;   // waits shorter than this are counted, not reported
  bool gil_py_enable = true;      // walk waiter and holder Python stacks
  double gil_py_min_ms = 0.0;     // ... only for waits at least this long
  std::string gil_hook = "auto";  // auto | take_gil | cond_wait
  // Outputs. stdout gets JSON lines unless another output is set (then only with --also-stdout).
  std::string sqlite_path;
  std::size_t sqlite_queue_max = 100000;
  std::string folded_path;
  std::string speedscope_path;
  bool report = true;           // end-of-run report on stderr
  double flush_timeout_s = 10;  // at exit, time to deliver what the database sinks still hold

  std::string clickhouse_url;  // empty: no ClickHouse
  std::string clickhouse_user = "default";
  std::string clickhouse_password;  // or PYEBPF_CLICKHOUSE_PASSWORD; never logged
  std::string clickhouse_database = "default";
  std::size_t ch_batch_size = 5000;
  double ch_flush_interval_s = 30;
  std::size_t ch_queue_max = 100000;

  // `pyebpf report FILE [--run N]`
  std::string report_file;
  long report_run = 0;  // 0: the latest run in the file

  // tcp_connect, tcp_accept, tcp_loss
  std::string net_scope = "targets";     // "targets": sockets of the target processes; "host": all
  std::string loss_filter_ip;            // tcp_loss: only events with this address at either end
  unsigned loss_rate_limit = 1000;       // tcp_loss events per second (all CPUs), 0: unlimited
  double offcpu_min_total_ms = 20;       // sleeps shorter than this are dropped in BPF
  double offcpu_py_min_ms = 0;           // Python stack only for sleeps at least this long
  bool offcpu_py_enable = true;          // walk Python stacks at all
  unsigned offcpu_max_stack_depth = 20;  // kernel and user frames kept (1..64)
  double offcpu_aggregate_s = 0;         // > 0: aggregated mode, emit totals every this many seconds
  std::string offcpu_hook = "auto";      // auto | tp_btf | raw_tp
  std::string offcpu_capture = "auto";   // auto | resume | switch-out: where stacks are taken
};

}  // namespace pyebpf::app
