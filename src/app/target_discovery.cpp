// SPDX-License-Identifier: Apache-2.0
#include "app/target_discovery.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"

namespace pyebpf::app {
namespace {

// An exec'd process is retried from 2 ms after the exec, doubling up to
// every 20 ms (a new worker is sampled soon after its interpreter is up),
// and given up after 5 s: a shell or any other non-CPython program.
constexpr std::uint64_t kFirstDelayNs = 2'000'000;
constexpr std::uint64_t kMaxDelayNs = 20'000'000;
constexpr std::uint64_t kGiveUpNs = 5'000'000'000;

bool has_exited(const Fd& pidfd) {
  pollfd p{pidfd.get(), POLLIN, 0};
  return poll(&p, 1, 0) != 0;  // readable (or an error): the process is gone
}

}  // namespace

Discovery::Discovery(Targets& targets, const python::OffsetsTable& table, const bpf::SharedMaps& shared,
                     const NamePattern* name, std::size_t max_targets, Callbacks callbacks)
    : targets_(targets),
      table_(table),
      shared_(shared),
      name_(name),
      max_targets_(max_targets),
      callbacks_(std::move(callbacks)),
      timer_(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) {
  if (!timer_) throw Error(errno_text("timerfd_create", errno));
}

void Discovery::scan_names(const std::vector<pid_t>& exclude) {
  std::vector<pid_t> skip = exclude;
  for (const auto& t : targets_.all()) skip.push_back(t.pid);
  auto pids = name_->scan(skip);
  // At start a match is CPython already or not at all: no retries.
  for (pid_t pid : pids) {
    if (at_limit()) break;
    try {
      Target& t = targets_.add(targets_.prepare(pid, table_));
      t.origin = "--name";
      lineage_[pid] = pid;
    } catch (const Error& e) {
      ++not_python_;
      spdlog::info("pid {} ({}) matches --name but is not traced: {}", pid, read_comm(pid, pid), e.what());
    }
  }
  if (pids.empty()) spdlog::info("no process matches --name '{}' yet; waiting for one to start", name_->text());
}

// Each process is tracked in BPF before its children are read: a child it
// forks after that is both read here and reported by its fork event, which
// attempt() then skips; one forked before is read here.
void Discovery::adopt_descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> todo;  // (pid, parent)
  for (pid_t child : children_of(root)) todo.emplace_back(child, root);
  while (!todo.empty()) {
    const auto [pid, parent] = todo.back();
    todo.pop_back();
    if (lineage_.count(pid)) continue;
    const std::uint32_t execs = callbacks_.track(pid);
    lineage_[pid] = root;
    for (pid_t child : children_of(pid)) todo.emplace_back(child, pid);
    if (targets_.live(pid) || at_limit()) continue;
    try {
      Target t = targets_.prepare(pid, table_);
      // It exec'd while being read: its exec event rediscovers it.
      if (callbacks_.track(pid) != execs) continue;
      t.parent = parent;
      t.service = root;
      t.origin = "child of " + std::to_string(parent);
      targets_.add(std::move(t));
    } catch (const Error& e) {
      spdlog::debug("pid {} ({}), a descendant of {}, is followed but not traced: {}", pid, read_comm(pid, pid), root,
                    e.what());
    }
  }
}

bool Discovery::at_limit() {
  if (targets_.alive() < max_targets_) return false;
  if (refused_++ == 0)
    spdlog::warn("--max-targets {} reached: new processes are not traced until a target ends (counted in the summary)",
                 max_targets_);
  return true;
}

void Discovery::wait_for(pid_t pid, pid_t parent, pid_t service, std::string origin, std::uint64_t event_ns,
                         std::uint64_t delay_ns, std::optional<std::size_t> copy_of) {
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.pid == pid; }),
                 waiting_.end());
  Fd pidfd;
  try {
    pidfd = open_pidfd(pid);  // now, so a PID reused later cannot be confused with this process
  } catch (const Error&) {
    ++exited_before_attach_;
    spdlog::info("pid {} ({}) exited before it could be attached", pid, origin);
    return;
  }
  std::uint64_t now = monotonic_ns();
  waiting_.push_back({pid,
                      parent,
                      copy_of,
                      service,
                      std::move(origin),
                      std::move(pidfd),
                      event_ns,
                      now,
                      now + delay_ns,
                      delay_ns,
                      {}});
}

void Discovery::on_event(const LifecycleEvent& e) {
  switch (e.kind) {
    case PYEBPF_LIFECYCLE_FORK: {
      auto parent = lineage_.find(e.parent);
      pid_t service = parent != lineage_.end() ? parent->second : e.parent;
      lineage_[e.pid] = service;
      // A copy of its parent: if the parent is CPython, so is the child, ready now.
      if (Target* parent_target = targets_.live(e.parent)) {
        wait_for(e.pid, e.parent, service, "child of " + std::to_string(e.parent), e.ts_ns, 0,
                 static_cast<std::size_t>(parent_target - targets_.all().data()));
      }
      break;
    }
    case PYEBPF_LIFECYCLE_EXEC: {
      std::string how = "exec'd " + e.comm;
      if (Target* t = targets_.live(e.pid)) callbacks_.ended(*t, how);
      if (e.tracked) {
        auto it = lineage_.find(e.pid);
        pid_t service = it != lineage_.end() ? it->second : e.pid;
        lineage_[e.pid] = service;
        wait_for(e.pid, 0, service, how, e.ts_ns, kFirstDelayNs);
      } else if (e.needle && name_ && name_->matches(read_command_line(e.pid))) {
        wait_for(e.pid, 0, e.pid, "--name, " + how, e.ts_ns, kFirstDelayNs);
      }
      break;
    }
    case PYEBPF_LIFECYCLE_EXIT:
      lineage_.erase(e.pid);
      waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.pid == e.pid; }),
                     waiting_.end());
      break;
  }
  retry_due();
}

bool Discovery::attempt(Waiting& w) {
  if (Target* t = targets_.live(w.pid)) {
    if (!has_exited(t->pidfd)) return true;  // found twice: by the walk at start and by its fork event
    callbacks_.ended(*t, "exited");          // its pid is reused: the old process's exit is not handled yet
  }
  if (at_limit()) {
    shared_.remove_process(w.pid);  // a forked child inherits its parent's entry in BPF
    return true;
  }
  try {
    const std::uint32_t execs = callbacks_.track(w.pid);
    // Not exec'd since the fork, and its parent not either (the parent
    // target of the fork is still live): the child's CPython is its parent's.
    const Target* parent = w.copy_of && execs == 0 ? &targets_.all()[*w.copy_of] : nullptr;
    const bool copy = parent && !parent->exited && parent->python;
    const std::uint64_t read_ns = monotonic_ns();
    Target t = targets_.prepare(w.pid, table_, &w.pidfd, copy ? parent->python.get() : nullptr);
    const std::uint64_t prepared_ns = monotonic_ns();
    t.parent = w.parent;
    t.service = w.service;
    t.origin = w.origin;
    Target& added = targets_.add(std::move(t));
    lineage_[added.pid] = added.service;
    callbacks_.added(added);
    wait_for_early_children(added);
    const std::uint64_t done_ns = monotonic_ns();
    spdlog::debug("pid {}: found {:.2f} ms after its {}, read in {:.2f} ms, trackers attached {:.2f} ms after the {}",
                  added.pid, (w.first_ns - w.event_ns) / 1e6, w.copy_of ? "fork" : "exec",
                  (prepared_ns - read_ns) / 1e6, (done_ns - w.event_ns) / 1e6, w.copy_of ? "fork" : "exec");
    spdlog::info("pid {} ({}, {}), every tracker attached {:.1f} ms after it was found: {}", added.pid, added.comm,
                 added.origin, static_cast<double>(monotonic_ns() - w.first_ns) / 1e6, added.python->describe());
    // An exec between reading the process and registering it: BPF may hold
    // the old layout for the new program; its exec event (on its way) ends
    // this target, but not before samples are walked with it. End it now.
    if (callbacks_.track(added.pid) != execs) callbacks_.ended(added, "exec'd while attached");
    return true;
  } catch (const Error& e) {
    w.last_error = e.what();
  }
  std::uint64_t now = monotonic_ns();
  if (has_exited(w.pidfd)) {
    ++exited_before_attach_;
    spdlog::info("pid {} ({}) exited before it could be attached", w.pid, w.origin);
    shared_.remove_process(w.pid);
    return true;
  }
  if (now - w.first_ns >= kGiveUpNs) {
    ++not_python_;
    spdlog::info("pid {} ({}, {}): not traced: {}", w.pid, read_comm(w.pid, w.pid), w.origin, w.last_error);
    shared_.remove_process(w.pid);
    return true;
  }
  w.delay_ns = std::clamp<std::uint64_t>(w.delay_ns * 2, kFirstDelayNs, kMaxDelayNs);
  w.next_ns = now + w.delay_ns;
  return false;
}

// A process that forked while it was still being read (a re-exec'd server
// master starting its workers) had its fork events before it was a target,
// when nothing followed them: its children are read now.
void Discovery::wait_for_early_children(const Target& parent) {
  const auto index = static_cast<std::size_t>(&parent - targets_.all().data());
  for (pid_t child : children_of(parent.pid)) {
    const bool waiting =
        std::any_of(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.pid == child; });
    if (waiting || targets_.live(child)) continue;
    lineage_[child] = parent.service;
    wait_for(child, parent.pid, parent.service, "child of " + std::to_string(parent.pid), monotonic_ns(), 0, index);
  }
}

void Discovery::retry_due() {
  std::uint64_t expirations;
  while (read(timer_.get(), &expirations, sizeof(expirations)) > 0) {
  }
  // attempt() may add targets and call back into the runner: iterate over a snapshot of the due ones.
  std::uint64_t now = monotonic_ns();
  std::vector<Waiting> due;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->next_ns <= now) {
      due.push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& w : due) {
    if (!attempt(w)) waiting_.push_back(std::move(w));
  }
  arm_timer();
}

void Discovery::arm_timer() {
  itimerspec spec{};
  if (!waiting_.empty()) {
    auto next = std::min_element(waiting_.begin(), waiting_.end(), [](const Waiting& a, const Waiting& b) {
                  return a.next_ns < b.next_ns;
                })->next_ns;
    spec.it_value.tv_sec = static_cast<time_t>(next / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(next % 1'000'000'000);
    if (next == 0) spec.it_value.tv_nsec = 1;
  }
  timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

bool Discovery::active() const {
  return name_ || targets_.alive() > 0 || !waiting_.empty() || !lineage_.empty();
}

std::vector<std::string> Discovery::summary_lines() const {
  std::vector<std::string> out;
  if (refused_) out.push_back(fmt::format("{} processes not traced: --max-targets {} reached", refused_, max_targets_));
  if (not_python_ || exited_before_attach_)
    out.push_back(fmt::format("{} followed processes were not CPython, {} exited before they could be attached",
                              not_python_, exited_before_attach_));
  return out;
}

}  // namespace pyebpf::app
