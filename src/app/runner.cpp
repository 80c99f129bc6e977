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
#include <exception>
#include <functional>
#include <optional>
#include <thread>

#include "app/discovery.hpp"
#include "app/lifecycle.hpp"
#include "app/name_pattern.hpp"
#include "app/outputs.hpp"
#include "app/registry.hpp"
#include "app/system_checks.hpp"
#include "app/targets.hpp"
#include "bpf/detach.hpp"
#include "bpf/features.hpp"
#include "bpf/libbpf_log.hpp"
#include "bpf/shared_maps.hpp"
#include "bpf/start_turn.hpp"
#include "python/memory.hpp"
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

// Ended targets whose CPython state is kept to name their late events.
constexpr std::size_t kKeptEnded = 16;

// epoll user data: which kind of fd fired, and which one.
enum class Source : std::uint32_t { Signal, Tick, Deadline, Target, Tracker, Lifecycle, Discovery };

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
// reason of the only tracker asked for, or every tracker's reason. Each
// starts on a thread of its own, taking turns (bpf/start_turn.hpp): only
// their BPF loads overlap.
void start_trackers(std::vector<std::unique_ptr<trackers::Tracker>>& trackers, trackers::TrackerContext& ctx) {
  std::vector<std::exception_ptr> errors(trackers.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < trackers.size(); ++i) {
      threads.emplace_back([&, i] {
        bpf::StartTurn turn;
        try {
          trackers[i]->start(ctx);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  }
  std::vector<std::unique_ptr<trackers::Tracker>> started;
  std::vector<Error> failures;
  for (std::size_t i = 0; i < trackers.size(); ++i) {
    auto& t = trackers[i];
    try {
      if (errors[i]) std::rethrow_exception(errors[i]);
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

  // Follow forks and execs from before the targets are attached, so no child
  // forked meanwhile is missed; the events wait in the ring buffer until the
  // trackers are started.
  trackers::Degradations degraded;
  bpf::SharedMaps shared_maps;
  std::optional<NamePattern> name;
  if (!options.name_pattern.empty()) name.emplace(options.name_pattern);
  const std::string needle = name ? name->needle(PYEBPF_LIFECYCLE_NEEDLE_MAX) : std::string();
  if (name) spdlog::info("--name: exec'd command lines are checked in BPF for '{}'", needle.empty() ? "(all)" : needle);
  Targets targets;
  std::optional<Discovery> discovery;  // set below; the lifecycle handler runs only from the event loop
  ProcessLifecycle lifecycle(shared_maps, options.follow_children, needle, name && needle.empty(),
                             [&](const LifecycleEvent& e) { discovery->on_event(e); });
  for (pid_t pid : options.pids) lifecycle.track(pid);

  const auto& offsets = python::OffsetsTable::embedded();
  targets.attach(options.pids, offsets, degraded);
  std::function<void(Target&)> start_tracing;
  std::function<void(Target&, const std::string&)> stop_tracing;
  discovery.emplace(targets, offsets, shared_maps, name ? &*name : nullptr, options.max_targets,
                    Discovery::Callbacks{[&](Target& t) { start_tracing(t); },
                                         [&](Target& t, const std::string& how) { stop_tracing(t, how); },
                                         [&](pid_t pid) { return lifecycle.track(pid); }});
  for (const auto& t : targets.all()) discovery->follow(t.pid);
  if (name) discovery->scan_names(self_and_ancestors());
  if (options.follow_children) {
    std::vector<pid_t> roots;
    for (const auto& t : targets.all()) roots.push_back(t.pid);
    for (pid_t root : roots) discovery->adopt_descendants(root);
  }
  for (const auto& t : targets.all()) {
    spdlog::info("pid {}: {}", t.pid, t.python->describe());
    shared_maps.add_process(t.pid, t.python->bpf_config());
    lifecycle.track(t.pid);
  }

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
  loop.add(lifecycle.wait_fd(), Source::Lifecycle, 0);
  loop.add(discovery->timer_fd(), Source::Discovery, 0);

  std::vector<std::string_view> names;
  for (const auto& t : trackers) names.push_back(t->name());
  spdlog::info("tracing {} process(es) with {}{}", targets.all().size(), fmt::join(names, ", "),
               options.follow_children ? ", and the processes they start" : "");

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
  // A target found after start gets what the ones found at start got.
  start_tracing = [&](Target& t) {
    bpf::DetachPause pause;  // its first requests may come within milliseconds
    shared_maps.add_process(t.pid, t.python->bpf_config());
    lifecycle.track(t.pid);
    loop.add(t.pidfd.get(), Source::Target, static_cast<std::uint32_t>(&t - targets.all().data()));
    for (auto& tracker : trackers) {
      try {
        const std::uint64_t begin_ns = monotonic_ns();
        tracker->add_target(t);
        spdlog::debug("pid {}: {} attached in {:.2f} ms", t.pid, tracker->name(), (monotonic_ns() - begin_ns) / 1e6);
      } catch (const Error& e) {
        degraded.add(tracker->name(), t.pid, t.python->name() + ": " + e.what(), e.hint());
      }
    }
  };
  // Deliver what BPF captured before the exit or exec, then forget the PID
  // so a process reusing it (or the program it execs) is not profiled with
  // what was known of this one.
  stop_tracing = [&](Target& t, const std::string& how) {
    consume_all();
    loop.remove(t.pidfd.get());
    shared_maps.remove_process(t.pid);
    for (auto& tracker : trackers) tracker->remove_target(t.pid);
    t.exited = true;
    t.end = how;
    t.ended_ns = monotonic_ns();
    targets.release_ended(kKeptEnded);
    spdlog::log(t.origin == "-p" ? spdlog::level::warn : spdlog::level::info,
                "pid {} ({}) {}; {} events captured from it", t.pid, t.comm, how, t.events);
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
          case Source::Target:
            lifecycle.consume();  // its exit event, and the forks before it
            if (!targets.all()[index].exited) stop_tracing(targets.all()[index], "exited");
            break;
          case Source::Tracker:
            lifecycle.consume();  // first: the targets their events come from
            trackers[index]->consume();
            break;
          case Source::Lifecycle:
            lifecycle.consume();
            break;
          case Source::Discovery:
            discovery->retry_due();
            break;
        }
      }
      if (!discovery->active()) stop_reason = "no target process left";
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
  lines.push_back(lifecycle.summary());
  for (const auto& line : degraded.lines()) lines.push_back(line);
  for (const auto& line : discovery->summary_lines()) lines.push_back(line);
  for (const auto& line : targets.summary_lines()) lines.push_back(line);
  for (const auto& line : outputs.summary_lines()) lines.push_back(line);
  SelfCost cost = self_cost();
  cost.target_reads = python::ProcessMemory::reads_made();
  lines.push_back(self_cost_line(cost, elapsed));
  outputs.record_end({clock.epoch_us(monotonic_ns()), elapsed, stop_reason, lines});
  if (!quiet) std::fputs(sinks::end_of_run_text(elapsed, stop_reason, lines, outputs.report()).c_str(), stderr);
  return 0;
}

}  // namespace pyebpf::app
