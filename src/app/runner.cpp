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
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/lifecycle.hpp"
#include "app/name_pattern.hpp"
#include "app/outputs.hpp"
#include "app/registry.hpp"
#include "app/system_checks.hpp"
#include "app/target_discovery.hpp"
#include "app/targets.hpp"
#include "bpf_runtime/detach.hpp"
#include "bpf_runtime/features.hpp"
#include "bpf_runtime/libbpf_log.hpp"
#include "bpf_runtime/shared_maps.hpp"
#include "bpf_runtime/start_turn.hpp"
#include "live/live_view.hpp"
#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"
#include "python/memory.hpp"
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
enum class Source : std::uint32_t {
  Signal,
  Tick,
  Deadline,
  Target,
  Tracker,
  Lifecycle,
  Discovery,
  ViewRefresh,
  ViewKeys
};

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
// starts on a thread of its own, taking turns (bpf_runtime/start_turn.hpp): only
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

sinks::RunInfo run_info_of(const Options& options, const WallClock& clock) {
  sinks::RunInfo info{options.env,          host_name(), PYEBPF_VERSION,
                      options.command_line, {},          clock.epoch_us(monotonic_ns())};
  for (pid_t p : options.pids) info.pids.push_back(p);
  return info;
}

std::optional<NamePattern> name_pattern_of(const Options& options) {
  if (options.name_pattern.empty()) return std::nullopt;
  return NamePattern(options.name_pattern);
}

// One run: its trackers, outputs, targets and event loop, made in this order
// (and destroyed in the reverse). Bad tracker names and bad outputs fail in
// the constructor, before anything attaches.
class Session {
 public:
  explicit Session(const Options& options);
  // Attaches, runs until a signal, --duration, the last target's end or a
  // closed stdout, drains and prints the summary; returns the exit status.
  int run();

 private:
  void attach_initial_targets();
  void start_trackers_and_watch();
  // A target found after start gets what the ones found at start got.
  void start_tracing(Target& t);
  // Delivers what BPF captured before the exit or exec, then forgets the PID
  // so a process reusing it (or the program it execs) is not profiled with
  // what was known of this one.
  void stop_tracing(Target& t, const std::string& how);
  void consume_all();
  void dispatch(const epoll_event& event);
  void loop_until_stopped();
  // pyebpf top: the live view, fed like any output, drawn on its timer.
  void start_live_view();
  std::vector<std::string> summary_lines(double elapsed) const;

  const Options& options_;
  std::vector<std::unique_ptr<trackers::Tracker>> trackers_;
  WallClock clock_;
  sinks::RunInfo run_info_;
  Outputs outputs_;
  trackers::Degradations degraded_;
  bpf::SharedMaps shared_maps_;
  std::optional<NamePattern> name_;
  std::string needle_;  // what BPF looks for in exec'd command lines (--name)
  Targets targets_;
  std::optional<Discovery> discovery_;  // set once the first targets are attached
  // Follows forks and execs from before the targets are attached, so no
  // child forked meanwhile is missed; the events wait in the ring buffer
  // until the trackers are started.
  ProcessLifecycle lifecycle_;
  trackers::TrackerContext ctx_;
  EventLoop loop_;
  Fd signals_;
  std::optional<JitteredTimer> ticker_;
  std::unique_ptr<live::LiveView> live_;
  Fd deadline_;
  std::uint64_t ticks_ = 0;
  std::string stop_reason_;
  bool quiet_ = false;
};

Session::Session(const Options& options)
    : options_(options),
      trackers_(create_trackers(options.enable, options.trackers)),
      run_info_(run_info_of(options, clock_)),
      outputs_(options, run_info_),
      name_(name_pattern_of(options)),
      needle_(name_ ? name_->needle(PYEBPF_LIFECYCLE_NEEDLE_MAX) : std::string()),
      lifecycle_(shared_maps_, options.follow_children, needle_, name_ && needle_.empty(),
                 [this](const LifecycleEvent& e) { discovery_->on_event(e); }),
      ctx_{options.env, targets_, shared_maps_, outputs_.sink(), clock_, degraded_} {
  if (name_)
    spdlog::info("--name: exec'd command lines are checked in BPF for '{}'", needle_.empty() ? "(all)" : needle_);
  for (pid_t pid : options.pids) lifecycle_.track(pid);
}

void Session::attach_initial_targets() {
  const auto& offsets = python::OffsetsTable::embedded();
  targets_.attach(options_.pids, offsets, degraded_);
  discovery_.emplace(targets_, offsets, shared_maps_, name_ ? &*name_ : nullptr, options_.max_targets,
                     Discovery::Callbacks{[this](Target& t) { start_tracing(t); },
                                          [this](Target& t, const std::string& how) { stop_tracing(t, how); },
                                          [this](pid_t pid) { return lifecycle_.track(pid); }});
  for (const auto& t : targets_.all()) discovery_->follow(t.pid);
  if (name_) discovery_->scan_names(self_and_ancestors());
  if (options_.follow_children) {
    std::vector<pid_t> roots;
    for (const auto& t : targets_.all()) roots.push_back(t.pid);
    for (pid_t root : roots) discovery_->adopt_descendants(root);
  }
  for (const auto& t : targets_.all()) {
    spdlog::info("pid {}: {}", t.pid, t.python->describe());
    shared_maps_.add_process(t.pid, t.python->bpf_config());
    lifecycle_.track(t.pid);
  }
}

void Session::start_trackers_and_watch() {
  signals_ = block_and_watch_signals();
  ticker_.emplace(std::chrono::seconds(1), 0.02);
  loop_.add(signals_.get(), Source::Signal, 0);
  loop_.add(ticker_->fd(), Source::Tick, 0);
  for (std::uint32_t i = 0; i < targets_.all().size(); ++i) loop_.add(targets_.all()[i].pidfd.get(), Source::Target, i);

  start_trackers(trackers_, ctx_);
  bpf::release_kernel_btf();
  for (std::uint32_t i = 0; i < trackers_.size(); ++i) {
    for (int fd : trackers_[i]->wait_fds()) loop_.add(fd, Source::Tracker, i);
  }
  loop_.add(lifecycle_.wait_fd(), Source::Lifecycle, 0);
  loop_.add(discovery_->timer_fd(), Source::Discovery, 0);

  std::vector<std::string_view> names;
  for (const auto& t : trackers_) names.push_back(t->name());
  spdlog::info("tracing {} process(es) with {}{}", targets_.all().size(), fmt::join(names, ", "),
               options_.follow_children ? ", and the processes they start" : "");
  if (options_.duration_s > 0) {
    deadline_ = make_timer(from_seconds(options_.duration_s), {});
    loop_.add(deadline_.get(), Source::Deadline, 0);
  }
}

void Session::start_live_view() {
  std::vector<std::string> pids, names;
  for (const auto& t : targets_.all()) pids.push_back(std::to_string(t.pid) + " " + t.comm);
  for (const auto& t : trackers_) names.emplace_back(t->name());
  auto lost = [this] {
    std::uint64_t n = 0;
    for (const auto& t : trackers_) n += t->events_lost();
    return n;
  };
  live_ =
      std::make_unique<live::LiveView>(top_feed(options_.trackers), lost,
                                       fmt::format("pyebpf top: {} | {}", fmt::join(pids, ", "), fmt::join(names, " ")),
                                       from_seconds(options_.top_refresh_s), live::make_display());
  outputs_.add(live_.get());
  loop_.add(live_->timer_fd(), Source::ViewRefresh, 0);
  if (live_->key_fd() >= 0) loop_.add(live_->key_fd(), Source::ViewKeys, 0);
}

void Session::start_tracing(Target& t) {
  bpf::DetachPause pause;  // its first requests may come within milliseconds
  shared_maps_.add_process(t.pid, t.python->bpf_config());
  lifecycle_.track(t.pid);
  loop_.add(t.pidfd.get(), Source::Target, static_cast<std::uint32_t>(&t - targets_.all().data()));
  for (auto& tracker : trackers_) {
    try {
      const std::uint64_t begin_ns = monotonic_ns();
      tracker->add_target(t);
      spdlog::debug("pid {}: {} attached in {:.2f} ms", t.pid, tracker->name(), (monotonic_ns() - begin_ns) / 1e6);
    } catch (const Error& e) {
      degraded_.add(tracker->name(), t.pid, t.python->name() + ": " + e.what(), e.hint());
    }
  }
}

void Session::stop_tracing(Target& t, const std::string& how) {
  consume_all();
  loop_.remove(t.pidfd.get());
  shared_maps_.remove_process(t.pid);
  for (auto& tracker : trackers_) tracker->remove_target(t.pid);
  t.exited = true;
  t.end = how;
  t.ended_ns = monotonic_ns();
  targets_.release_ended(kKeptEnded);
  spdlog::log(t.origin == "-p" ? spdlog::level::warn : spdlog::level::info,
              "pid {} ({}) {}; {} events captured from it", t.pid, t.comm, how, t.events);
}

void Session::consume_all() {
  for (auto& t : trackers_) t->consume();
  outputs_.flush();
}

void Session::dispatch(const epoll_event& event) {
  const auto index = static_cast<std::uint32_t>(event.data.u64);
  switch (static_cast<Source>(event.data.u64 >> 32)) {
    case Source::Signal: {
      signalfd_siginfo info{};
      if (read(signals_.get(), &info, sizeof(info)) == sizeof(info))
        stop_reason_ = std::string("received SIG") + sigabbrev_np(static_cast<int>(info.ssi_signo));
      break;
    }
    case Source::Tick:
      ticker_->expired();
      if (++ticks_ % 60 == 0) clock_.refresh();
      for (auto& t : trackers_) t->tick();
      break;
    case Source::Deadline:
      stop_reason_ = "duration reached";
      break;
    case Source::Target:
      lifecycle_.consume();  // its exit event, and the forks before it
      if (!targets_.all()[index].exited) stop_tracing(targets_.all()[index], "exited");
      break;
    case Source::Tracker:
      lifecycle_.consume();  // first: the targets their events come from
      trackers_[index]->consume();
      break;
    case Source::Lifecycle:
      lifecycle_.consume();
      break;
    case Source::Discovery:
      discovery_->retry_due();
      break;
    case Source::ViewRefresh:
      live_->refresh();
      break;
    case Source::ViewKeys:
      if (!live_->on_keys()) stop_reason_ = "q pressed";
      break;
  }
}

void Session::loop_until_stopped() {
  try {
    while (stop_reason_.empty()) {
      epoll_event events[32];
      const int n = loop_.wait(events, 32);
      for (int i = 0; i < n && stop_reason_.empty(); ++i) dispatch(events[i]);
      if (!discovery_->active()) stop_reason_ = "no target process left";
      outputs_.flush();
    }
    consume_all();
    for (auto& t : trackers_) t->finish();
    outputs_.flush();
  } catch (const sinks::OutputClosed&) {
    // `| head`: end quietly, but still deliver to the other outputs.
    spdlog::debug("stdout closed; stopping");
    stop_reason_ = "stdout closed";
    quiet_ = true;
    outputs_.drop_stdout();
    consume_all();
    for (auto& t : trackers_) t->finish();
  }
}

std::vector<std::string> Session::summary_lines(double elapsed) const {
  std::vector<std::string> lines;
  auto append = [&](std::vector<std::string> more) {
    lines.insert(lines.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  };
  for (const auto& t : trackers_) append(t->summary());
  lines.push_back(lifecycle_.summary());
  append(degraded_.lines());
  append(discovery_->summary_lines());
  append(targets_.summary_lines());
  append(outputs_.summary_lines());
  SelfCost cost = self_cost();
  cost.target_reads = python::ProcessMemory::reads_made();
  lines.push_back(self_cost_line(cost, elapsed));
  return lines;
}

int Session::run() {
  attach_initial_targets();
  start_trackers_and_watch();
  if (options_.command == Options::Command::Top) start_live_view();
  const std::uint64_t start_ns = monotonic_ns();
  loop_until_stopped();
  if (live_) outputs_.remove(live_.get());
  live_.reset();  // the terminal back before the end-of-run text
  spdlog::info("stopping: {}", stop_reason_);
  const double elapsed = static_cast<double>(monotonic_ns() - start_ns) / 1e9;
  outputs_.close(signals_.get());
  const std::vector<std::string> lines = summary_lines(elapsed);
  outputs_.record_end({clock_.epoch_us(monotonic_ns()), elapsed, stop_reason_, lines});
  if (!quiet_) std::fputs(sinks::end_of_run_text(elapsed, stop_reason_, lines, outputs_.report()).c_str(), stderr);
  return 0;
}

}  // namespace

int run(const Options& options) {
  check_system();
  bpf::install_libbpf_logger();
  Session session(options);
  return session.run();
}

}  // namespace pyebpf::app
