// SPDX-License-Identifier: Apache-2.0
#include "dump/waits.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "dump/python_locks.hpp"
#include "dump/syscalls.hpp"
#include "gil.h"
#include "pyebpf/error.hpp"
#include "python/process.hpp"
#include "trackers/gc/gc.hpp"
#include "trackers/gil/gil.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace pyebpf::dump {
namespace {

constexpr std::size_t kMaxPolledFds = 8;  // named per poll/epoll wait; the rest counted

// Where the main interpreter's GIL is and who holds it, read once per dump.
struct Gil {
  std::uint64_t cond = 0, mutex = 0, holder = 0;
  bool locked = false;
  bool waited_on(std::uint64_t futex) const { return futex - cond < PYEBPF_GIL_COND_BYTES || futex == mutex; }
};

std::optional<Gil> read_gil(const python::PythonProcess& python, std::vector<std::string>& problems) {
  try {
    const auto& row = python.offsets();
    const auto& memory = python.objects().memory();
    const std::uint64_t at = trackers::find_gil(python);
    auto locked = memory.read_value<std::int32_t>(at + row.require("gil.locked"));
    auto holder = memory.read_u64(at + row.require("gil.last_holder"));
    if (!locked || !holder) throw Error("the GIL state at " + hex(at) + " cannot be read");
    return Gil{at + row.require("gil.cond"), at + row.require("gil.mutex"), *holder, *locked == 1};
  } catch (const Error& e) {
    problems.push_back(std::string("GIL holder and waiters not known: ") + e.what());
    return std::nullopt;
  }
}

bool collecting(const python::PythonProcess& python, std::vector<std::string>& problems) {
  try {
    const pyebpf_gc_proc gc = trackers::gc_proc_config(python);
    auto value =
        python.objects().memory().read_value<std::int32_t>(gc.gcstate + python.offsets().require("gc.collecting"));
    return value && *value != 0;
  } catch (const Error& e) {
    problems.push_back(std::string("whether a collection runs is not known: ") + e.what());
    return false;
  }
}

double timespec_ms(const std::array<std::int64_t, 2>& ts) {
  return static_cast<double>(ts[0]) * 1e3 + static_cast<double>(ts[1]) / 1e6;
}

// select/pselect6 on no file descriptors is a sleep: how Python before
// 3.11 implements time.sleep.
bool select_sleep(const DumpedThread& t) {
  const auto& a = t.raw.args;
  return (t.syscall == "select" || t.syscall == "pselect6") && a[0] == 0 && !a[1] && !a[2] && !a[3] && a[4];
}

// nanosleep(req, rem), clock_nanosleep(clock, flags, req, rem),
// select(0, ..., timeval) and pselect6(0, ..., timespec): how long, and how
// long is left (for a relative one, the request less the time asleep).
Wait sleep_wait(const DumpedThread& t, const python::ProcessMemory& memory) {
  Wait w;
  w.kind = "sleep";
  w.object = nlohmann::ordered_json::object();
  const bool clock_call = t.syscall == "clock_nanosleep";
  const std::uint64_t request = clock_call ? t.raw.args[2] : select_sleep(t) ? t.raw.args[4] : t.raw.args[0];
  auto ts = memory.read_value<std::array<std::int64_t, 2>>(request);
  if (!ts) {
    w.text = "sleep";
    return w;
  }
  if (t.syscall == "select") (*ts)[1] *= 1000;  // a timeval: microseconds
  double left = 0;
  if (clock_call && (t.raw.args[1] & TIMER_ABSTIME)) {
    timespec now{};
    clock_gettime(static_cast<clockid_t>(t.raw.args[0]), &now);
    left = timespec_ms(*ts) - timespec_ms({now.tv_sec, now.tv_nsec});
  } else {
    w.object["requested_ms"] = timespec_ms(*ts);
    left = timespec_ms(*ts) - t.state_ms.value_or(0);
  }
  left = std::max(left, 0.0);
  w.object["left_ms"] = left;
  w.text = w.object.contains("requested_ms")
               ? "sleep of " + human_duration(timespec_ms(*ts)) + ", " + human_duration(left) + " left"
               : "sleep, " + human_duration(left) + " left";
  return w;
}

// The file descriptors an epoll instance watches, from /proc/PID/fdinfo.
std::vector<int> epoll_fds(pid_t pid, int epfd) {
  std::vector<int> out;
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(epfd));
  if (!text) return out;
  for (std::size_t at = text->find("tfd:"); at != std::string::npos; at = text->find("tfd:", at + 4)) {
    std::size_t pos = at + 4;
    while (pos < text->size() && (*text)[pos] == ' ') ++pos;
    int fd = 0;
    while (pos < text->size() && (*text)[pos] >= '0' && (*text)[pos] <= '9') fd = fd * 10 + ((*text)[pos++] - '0');
    out.push_back(fd);
  }
  return out;
}

// poll/ppoll's pollfd array or an epoll instance's fds, each named.
Wait poll_wait(const DumpedThread& t, pid_t pid, const python::ProcessMemory& memory,
               std::optional<std::map<std::uint64_t, net::ProcSocket>>& sockets) {
  Wait w;
  w.kind = "poll";
  std::vector<int> fds;
  std::string what = t.syscall;
  if (t.syscall.rfind("epoll", 0) == 0) {
    fds = epoll_fds(pid, static_cast<int>(t.raw.args[0]));
    what += fmt::format(" on epoll fd {}", t.raw.args[0]);
  } else if (t.syscall == "poll" || t.syscall == "ppoll") {
    const std::size_t n = std::min<std::uint64_t>(t.raw.args[1], 64);
    for (std::size_t i = 0; i < n; ++i)
      if (auto p = memory.read_value<pollfd>(t.raw.args[0] + i * sizeof(pollfd)); p && p->fd >= 0) fds.push_back(p->fd);
  }
  w.object = nlohmann::ordered_json::object();
  w.object["fds"] = nlohmann::ordered_json::array();
  std::vector<std::string> named;
  for (int fd : fds) {
    if (named.size() == kMaxPolledFds) break;
    auto target = describe_fd(pid, fd, sockets);
    if (!target) continue;
    nlohmann::ordered_json o = target->object;
    o["fd"] = fd;
    w.object["fds"].push_back(o);
    named.push_back(target->text);
  }
  w.text = what + (fds.empty() ? "" : fmt::format(" ({} fds", fds.size()));
  if (!fds.empty()) {
    for (std::size_t i = 0; i < named.size(); ++i) w.text += (i ? ", " : ": ") + named[i];
    w.text += fds.size() > named.size() ? ", ...)" : ")";
  }
  return w;
}

Wait child_wait(const DumpedThread& t) {
  Wait w;
  w.kind = "child";
  const auto pid = static_cast<std::int32_t>(t.raw.args[t.syscall == "waitid" ? 1 : 0]);
  w.text = pid > 0 ? fmt::format("child process {} to exit", pid) : "a child process to exit";
  w.object = {{"child_pid", pid}};
  return w;
}

// A wait named by the kernel stack alone: the function it sleeps in.
Wait kernel_wait(const DumpedThread& t) {
  Wait w;
  w.kind = t.state == "uninterruptible" ? "disk" : "other";
  std::string leaf;
  for (auto it = t.kernel_stack.rbegin(); it != t.kernel_stack.rend(); ++it) {
    if (it->kind != stack::NativeFrame::Kind::Symbol) continue;
    std::string_view s = it->symbol;
    if (s == "__schedule" || s == "schedule" || s.starts_with("schedule_") || s.find("preempt") != s.npos) continue;
    leaf = std::string(s);
    break;
  }
  if (t.state == "uninterruptible") {
    bool io = std::any_of(t.kernel_stack.begin(), t.kernel_stack.end(), [](const stack::NativeFrame& f) {
      return f.symbol == "io_schedule" || f.symbol.starts_with("folio_wait") || f.symbol.starts_with("blk_") ||
             f.symbol.starts_with("wait_on_page");
    });
    if (!io) w.kind = "other";
    w.text = (io ? "disk or page I/O" : "uninterruptible kernel wait") + (leaf.empty() ? "" : " in " + leaf);
  } else {
    w.text = (t.syscall.empty() ? std::string("kernel wait") : t.syscall) + (leaf.empty() ? "" : " in " + leaf);
  }
  return w;
}

// The thread whose Python thread state is `tstate`, if any.
const DumpedThread* thread_of(const std::vector<DumpedThread>& threads, std::uint64_t tstate) {
  for (const auto& other : threads)
    if (tstate && other.raw.py.tstate == tstate) return &other;
  return nullptr;
}

// A futex wait: for the GIL, and who holds it, when the futex is the GIL's
// and `t` does not hold it; else the bare futex.
void name_futex_wait(DumpedThread& t, const std::optional<Gil>& gil, bool holds,
                     const std::vector<DumpedThread>& threads) {
  const std::uint64_t futex = t.raw.args[0];
  if (gil && !holds && gil->waited_on(futex)) {
    t.gil = "waits";
    t.wait.kind = "gil";
    t.wait.address = futex;
    const DumpedThread* holder = gil->locked ? thread_of(threads, gil->holder) : nullptr;
    t.wait.text = !gil->locked ? "the GIL (free: it is about to take it)"
                  : holder     ? fmt::format("the GIL, held by {} (tid {})", holder->thread_name, holder->raw.hdr.tid)
                               : "the GIL, held by a thread without Python state";
    t.wait.object = {{"gil", hex(gil->cond)}};
    if (holder) t.waits_for = static_cast<pid_t>(holder->raw.hdr.tid);
  } else {
    t.wait = kernel_wait(t);
    t.wait.kind = "futex";
    t.wait.address = futex;
    t.wait.text = "futex at " + hex(futex);
    t.wait.object = {{"address", hex(futex)}};
  }
}

}  // namespace

std::string human_duration(double ms) {
  if (ms < 1) return fmt::format("{:.3f} ms", ms);
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  if (ms < 120'000) return fmt::format("{:.1f} s", ms / 1e3);
  if (ms < 7'200'000) return fmt::format("{:.1f} min", ms / 6e4);
  return fmt::format("{:.1f} h", ms / 3.6e6);
}

std::optional<FdTarget> describe_fd(pid_t pid, int fd,
                                    std::optional<std::map<std::uint64_t, net::ProcSocket>>& sockets) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  const std::string target(buf, static_cast<std::size_t>(n));
  FdTarget out;
  out.object = {{"fd", fd}};
  if (target.rfind("socket:[", 0) == 0) {
    const std::uint64_t inode = std::strtoull(target.c_str() + 8, nullptr, 10);
    if (!sockets) sockets = net::read_proc_sockets(pid);
    out.kind = "socket";
    auto it = sockets->find(inode);
    if (it == sockets->end()) {
      out.text = fmt::format("socket fd {} (inode {})", fd, inode);
      return out;
    }
    const net::ProcSocket& s = it->second;
    out.text = s.protocol + " " + (s.local.empty() ? "(unnamed)" : s.local) + (s.peer.empty() ? "" : " -> " + s.peer) +
               (s.state.empty() ? "" : " " + s.state);
    out.object["protocol"] = s.protocol;
    out.object["local"] = s.local;
    if (!s.peer.empty()) out.object["peer"] = s.peer;
    if (!s.state.empty()) out.object["state"] = s.state;
  } else if (target.rfind("pipe:[", 0) == 0) {
    out.kind = "pipe";
    out.text = fmt::format("pipe fd {}", fd);
  } else if (target.rfind("anon_inode:", 0) == 0) {
    out.kind = "other";
    out.text = fmt::format("{} fd {}", target.substr(11), fd);
    out.object["path"] = target;
  } else {
    out.kind = "file";
    out.text = target;
    out.object["path"] = target;
  }
  return out;
}

void name_waits(DumpedProcess& p, const python::PythonProcess& python) {
  const auto& memory = python.objects().memory();
  python::ProcessMemory::Batch batch(memory);
  const std::optional<Gil> gil = read_gil(python, p.problems);
  const bool gc = collecting(python, p.problems);
  std::optional<std::map<std::uint64_t, net::ProcSocket>> sockets;
  for (auto& t : p.threads) {
    const bool holds = gil && gil->locked && t.raw.py.tstate && t.raw.py.tstate == gil->holder;
    if (holds) {
      t.gil = "holds";
      t.in_gc = gc;
    }
    if (t.syscall.empty() && t.state != "uninterruptible") continue;  // running, runnable, or not in a system call
    const std::uint64_t arg0 = t.raw.args[0];
    switch (syscall_kind(t.raw.syscall)) {
      case SyscallKind::Futex:
        name_futex_wait(t, gil, holds, p.threads);
        break;
      case SyscallKind::FdWait:
        if (auto fd = describe_fd(p.pid, static_cast<int>(arg0), sockets)) {
          t.wait.kind = fd->kind;
          t.wait.text = fd->text + " (" + t.syscall + ")";
          t.wait.object = std::move(fd->object);
        } else {
          t.wait = kernel_wait(t);
        }
        break;
      case SyscallKind::Sleep:
        t.wait = sleep_wait(t, memory);
        break;
      case SyscallKind::Poll:
        t.wait = select_sleep(t) ? sleep_wait(t, memory) : poll_wait(t, p.pid, memory, sockets);
        break;
      case SyscallKind::Child:
        t.wait = child_wait(t);
        break;
      default:
        t.wait = kernel_wait(t);
        break;
    }
  }
  name_python_waits(p, python);
}

}  // namespace pyebpf::dump
