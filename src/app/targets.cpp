// SPDX-License-Identifier: Apache-2.0
#include "app/targets.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"

namespace pyebpf::app {

Fd open_pidfd(pid_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH)
      throw Error("pid " + std::to_string(pid) + " does not exist", "check the PID with ps -p " + std::to_string(pid));
    throw Error(errno_text("pidfd_open(" + std::to_string(pid) + ")", errno), "pyebpf needs Linux >= 5.3");
  }
  return Fd(fd);
}

Targets::Targets() : start_ns_(monotonic_ns()) {}

Target Targets::prepare(pid_t pid, const python::OffsetsTable& table, Fd* pidfd,
                        const python::PythonProcess* fork_of) const {
  Target t;
  t.pid = pid;
  t.service = pid;
  // First, so a PID reused later cannot be confused with this one.
  Fd own = pidfd && *pidfd ? Fd() : open_pidfd(pid);
  t.comm = read_comm(pid, pid);
  t.python = fork_of ? python::PythonProcess::fork_of(*fork_of, pid) : python::PythonProcess::attach(pid, table);
  t.version = t.python->interpreter().version.str();
  t.pidfd = own ? std::move(own) : std::move(*pidfd);
  t.attached_ns = monotonic_ns();
  return t;
}

void Targets::attach(const std::vector<pid_t>& pids, const python::OffsetsTable& table,
                     trackers::Degradations& degraded) {
  std::vector<Target> attached;
  std::vector<std::pair<pid_t, Error>> failed;
  for (pid_t pid : pids) {
    if (std::any_of(attached.begin(), attached.end(), [&](const Target& t) { return t.pid == pid; })) continue;
    try {
      attached.push_back(prepare(pid, table));
    } catch (const Error& e) {
      failed.emplace_back(pid, e);
    }
  }
  if (attached.empty() && !failed.empty()) throw failed.front().second;
  for (const auto& [pid, e] : failed) degraded.add("", pid, e.what(), e.hint());
  targets_ = std::move(attached);
}

Target& Targets::add(Target target) {
  targets_.push_back(std::move(target));
  return targets_.back();
}

Target* Targets::live(pid_t pid) {
  for (auto& t : targets_) {
    if (t.pid == pid && !t.exited) return &t;
  }
  return nullptr;
}

// The latest target with that pid: an ended one keeps naming the events it
// left in the ring buffers until a new process takes its pid.
python::PythonProcess* Targets::python(pid_t pid) {
  for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) {
    if (it->pid == pid) return it->python.get();
  }
  return nullptr;
}

python::FrameResolver* Targets::frames(pid_t pid) {
  auto* p = python(pid);
  return p ? &p->symbolizer() : nullptr;
}

std::optional<std::string> Targets::thread_name(pid_t pid, std::uint64_t thread_ident, std::uint32_t ns_tid,
                                                bool fresh) {
  auto* p = python(pid);
  if (!p || !thread_ident) return std::nullopt;
  if (fresh) p->thread_names().refresh();
  return p->thread_names().name(thread_ident, ns_tid);
}

void Targets::count_event(pid_t pid, const std::string& metric) {
  for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) {
    if (it->pid != pid) continue;
    std::uint64_t now = monotonic_ns();
    if (!it->first_event_ns) it->first_event_ns = now;
    it->last_event_ns = now;
    ++it->events;
    ++it->metric_events[metric];
    return;
  }
}

void Targets::release_ended(std::size_t keep) {
  std::size_t kept = 0;
  for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) {
    if (it->exited && it->python && kept++ >= keep) it->python.reset();
  }
}

std::size_t Targets::alive() const {
  return static_cast<std::size_t>(
      std::count_if(targets_.begin(), targets_.end(), [](const Target& t) { return !t.exited; }));
}

std::string Targets::summary_line(const Target& t) const {
  auto at = [&](std::uint64_t ns) { return fmt::format("{:.1f} s", static_cast<double>(ns - start_ns_) / 1e9); };
  std::string line = fmt::format("pid {} ({}, CPython {}, {}): traced {}-{}", t.pid, t.comm, t.version, t.origin,
                                 at(t.attached_ns), t.exited ? at(t.ended_ns) + " (" + t.end + ")" : "end (running)");
  if (t.first_event_ns) line += fmt::format(", events {}-{}", at(t.first_event_ns), at(t.last_event_ns));
  line += fmt::format("; {} events", t.events);
  std::string per_metric;
  for (const auto& [metric, n] : t.metric_events)
    per_metric += fmt::format("{}{} {}", per_metric.empty() ? "" : ", ", metric, n);
  if (!per_metric.empty()) line += " (" + per_metric + ")";
  return line;
}

std::vector<std::string> Targets::summary_lines() const {
  std::vector<pid_t> services;
  for (const auto& t : targets_) {
    if (std::find(services.begin(), services.end(), t.service) == services.end()) services.push_back(t.service);
  }
  std::vector<std::string> out;
  for (pid_t service : services) {
    std::size_t n = 0;
    std::uint64_t events = 0;
    for (const auto& t : targets_) {
      if (t.service != service) continue;
      ++n;
      events += t.events;
    }
    bool group = n > 1;
    if (group) out.push_back(fmt::format("service pid {}: {} processes traced, {} events", service, n, events));
    for (const auto& t : targets_) {
      if (t.service == service) out.push_back((group ? "  " : "") + summary_line(t));
    }
  }
  return out;
}

}  // namespace pyebpf::app
