// SPDX-License-Identifier: Apache-2.0
#include "app/runner.hpp"

#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "app/outputs.hpp"
#include "app/registry.hpp"
#include "app/system_checks.hpp"
#include "app/targets.hpp"
#include "bpf/features.hpp"
#include "bpf/libbpf_log.hpp"
#include "bpf/shared_maps.hpp"
#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"
#include "util/clock.hpp"
#include "util/self_cost.hpp"
#include "util/timer.hpp"

#ifndef PYEBPF_VERSION
#define PYEBPF_VERSION "0.0.0"
#endif

namespace pyebpf::app {
namespace {

// epoll user data: which kind of fd fired, and which one.
enum class Source : std::uint32_t { Signal, Tick, Deadline, Target, Tracker };

std::uint64_t tag(Source source, std::uint32_t index) {
  return (static_cast<std::uint64_t>(source) << 32) | index;
}

class EventLoop {
 public:
  EventLoop() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_) throw Error(errno_text("epoll_create1", errno));
  }
  void add(int fd, Source source, std::uint32_t index) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag(source, index);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev)) throw Error(errno_text("epoll_ctl", errno));
  }
  void remove(int fd) { epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }
  int wait(epoll_event* events, int max) {
    int n = epoll_wait(epoll_.get(), events, max, -1);
    return n < 0 ? 0 : n;  // EINTR: just loop
  }

 private:
  Fd epoll_;
};

Fd block_and_watch_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed stdout shows up as EPIPE instead
  Fd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) throw Error(errno_text("signalfd", errno));
  return fd;
}

// Starts every tracker that can run; one that cannot is dropped and recorded
// in ctx.degraded, the others go on. Throws only when none can run: the
// reason of the only tracker asked for, or every tracker's reason.
void start_trackers(std::vector<std::unique_ptr<trackers::Tracker>>& trackers, trackers::TrackerContext& ctx) {
  std::vector<std::unique_ptr<trackers::Tracker>> started;
  std::vector<Error> failures;
  for (auto& t : trackers) {
    try {
      t->start(ctx);
      started.push_back(std::move(t));
    } catch (const Error& e) {
      failures.push_back(e);
      if (trackers.size() > 1) ctx.degraded.add(t->name(), 0, e.what(), e.hint());
    }
  }
  if (started.empty() && failures.size() == 1) throw failures.front();
  if (started.empty()) {
    std::string reasons;
    for (const auto& e : failures) reasons += std::string(reasons.empty() ? "" : "; ") + e.what();
    throw Error("no tracker can run: " + reasons, failures.front().hint());
  }
  trackers = std::move(started);
}

}  // namespace

int run(const Options& options) {
  check_system();
  bpf::install_libbpf_logger();
  auto trackers = create_trackers(options.enable, options.trackers);  // bad names fail before anything attaches

  WallClock clock;
  sinks::RunInfo run_info{options.env,          host_name(), PYEBPF_VERSION,
                          options.command_line, {},          clock.epoch_us(monotonic_ns())};
  for (pid_t p : options.pids) run_info.pids.push_back(p);
  Outputs outputs(options, run_info);  // a bad output fails before anything attaches

  trackers::Degradations degraded;
  Targets targets;
  targets.attach(options.pids, python::OffsetsTable::embedded(), degraded);
  for (const auto& t : targets.all()) spdlog::info("pid {}: {}", t.pid, t.python->describe());

  bpf::SharedMaps shared_maps;
  for (const auto& t : targets.all()) shared_maps.add_process(t.pid, t.python->bpf_config());

  trackers::TrackerContext ctx{options.env, targets, shared_maps, outputs.sink(), clock, degraded};

  EventLoop loop;
  Fd signals = block_and_watch_signals();
  JitteredTimer ticker(std::chrono::seconds(1), 0.02);
  loop.add(signals.get(), Source::Signal, 0);
  loop.add(ticker.fd(), Source::Tick, 0);
  for (std::uint32_t i = 0; i < targets.all().size(); ++i) loop.add(targets.all()[i].pidfd.get(), Source::Target, i);

  start_trackers(trackers, ctx);
  bpf::release_kernel_btf();
  for (std::uint32_t i = 0; i < trackers.size(); ++i) {
    for (int fd : trackers[i]->wait_fds()) loop.add(fd, Source::Tracker, i);
  }

  std::vector<std::string_view> names;
  for (const auto& t : trackers) names.push_back(t->name());
  spdlog::info("tracing {} process(es) with {}", targets.all().size(), fmt::join(names, ", "));

  const std::uint64_t start_ns = monotonic_ns();
  Fd deadline;
  if (options.duration_s > 0) {
    deadline = make_timer(from_seconds(options.duration_s), {});
    loop.add(deadline.get(), Source::Deadline, 0);
  }
  std::string stop_reason;
  bool quiet = false;
  auto consume_all = [&] {
    for (auto& t : trackers) t->consume();
    outputs.flush();
  };

  try {
    std::uint64_t ticks = 0;
    while (stop_reason.empty()) {
      epoll_event events[32];
      int n = loop.wait(events, 32);
      for (int i = 0; i < n && stop_reason.empty(); ++i) {
        auto source = static_cast<Source>(events[i].data.u64 >> 32);
        auto index = static_cast<std::uint32_t>(events[i].data.u64);
        switch (source) {
          case Source::Signal: {
            signalfd_siginfo info{};
            if (read(signals.get(), &info, sizeof(info)) == sizeof(info))
              stop_reason = std::string("received SIG") + sigabbrev_np(static_cast<int>(info.ssi_signo));
            break;
          }
          case Source::Tick:
            ticker.expired();
            if (++ticks % 60 == 0) clock.refresh();
            for (auto& t : trackers) t->tick();
            break;
          case Source::Deadline:
            stop_reason = "duration reached";
            break;
          case Source::Target: {
            // Deliver what BPF captured before the exit, then forget the PID so
            // a new process reusing it is not profiled by mistake.
            Target& t = targets.all()[index];
            consume_all();
            loop.remove(t.pidfd.get());
            shared_maps.remove_process(t.pid);
            t.exited = true;
            t.exited_after_s = static_cast<double>(monotonic_ns() - start_ns) / 1e9;
            spdlog::warn("pid {} ({}) exited; {} events captured from it", t.pid, t.comm, t.events);
            if (targets.alive() == 0) stop_reason = "no target process left";
            break;
          }
          case Source::Tracker:
            trackers[index]->consume();
            break;
        }
      }
      outputs.flush();
    }
    consume_all();
    for (auto& t : trackers) t->finish();
    outputs.flush();
  } catch (const sinks::OutputClosed&) {
    // `| head`: end quietly, but still deliver to the other outputs.
    spdlog::debug("stdout closed; stopping");
    stop_reason = "stdout closed";
    quiet = true;
    outputs.drop_stdout();
    consume_all();
    for (auto& t : trackers) t->finish();
  }

  spdlog::info("stopping: {}", stop_reason);
  double elapsed = static_cast<double>(monotonic_ns() - start_ns) / 1e9;
  outputs.close(signals.get());
  std::vector<std::string> lines;
  for (auto& t : trackers) {
    for (auto& line : t->summary()) lines.push_back(std::move(line));
  }
  for (const auto& line : degraded.lines()) lines.push_back(line);
  for (const auto& line : targets.summary_lines()) lines.push_back(line);
  for (const auto& line : outputs.summary_lines()) lines.push_back(line);
  lines.push_back(self_cost_line(self_cost(), elapsed));
  outputs.record_end({clock.epoch_us(monotonic_ns()), elapsed, stop_reason, lines});
  if (!quiet) std::fputs(sinks::end_of_run_text(elapsed, stop_reason, lines, outputs.report()).c_str(), stderr);
  return 0;
}

}  // namespace pyebpf::app
