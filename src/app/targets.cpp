// SPDX-License-Identifier: Apache-2.0
#include "app/targets.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "pyebpf/error.hpp"
#include "util/files.hpp"

namespace pyebpf::app {
namespace {

Fd open_pidfd(pid_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH)
      throw Error("pid " + std::to_string(pid) + " does not exist", "check the PID with ps -p " + std::to_string(pid));
    throw Error(errno_text("pidfd_open(" + std::to_string(pid) + ")", errno), "pyebpf needs Linux >= 5.3");
  }
  return Fd(fd);
}

}  // namespace

void Targets::attach(const std::vector<pid_t>& pids, const python::OffsetsTable& table,
                     trackers::Degradations& degraded) {
  std::vector<Target> attached;
  std::vector<std::pair<pid_t, Error>> failed;
  for (pid_t pid : pids) {
    if (std::any_of(attached.begin(), attached.end(), [&](const Target& t) { return t.pid == pid; })) continue;
    try {
      Target t;
      t.pid = pid;
      t.pidfd = open_pidfd(pid);  // first, so a PID reused later cannot be confused with this one
      t.comm = read_comm(pid, pid);
      t.python = python::PythonProcess::attach(pid, table);
      attached.push_back(std::move(t));
    } catch (const Error& e) {
      failed.emplace_back(pid, e);
    }
  }
  if (attached.empty() && !failed.empty()) throw failed.front().second;
  for (const auto& [pid, e] : failed) degraded.add("", pid, e.what(), e.hint());
  targets_ = std::move(attached);
}

python::PythonProcess* Targets::python(pid_t pid) {
  for (auto& t : targets_) {
    if (t.pid == pid) return t.python.get();
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

void Targets::count_event(pid_t pid) {
  for (auto& t : targets_) {
    if (t.pid == pid) ++t.events;
  }
}

std::size_t Targets::alive() const {
  return static_cast<std::size_t>(
      std::count_if(targets_.begin(), targets_.end(), [](const Target& t) { return !t.exited; }));
}

std::vector<std::string> Targets::summary_lines() const {
  std::vector<std::string> out;
  for (const auto& t : targets_) {
    std::string state =
        t.exited ? "exited after " + std::to_string(static_cast<long>(t.exited_after_s)) + " s" : "running";
    out.push_back("pid " + std::to_string(t.pid) + " (" + t.comm + ", CPython " +
                  t.python->interpreter().version.str() + "): " + std::to_string(t.events) + " events, " + state);
  }
  return out;
}

}  // namespace pyebpf::app
