// SPDX-License-Identifier: Apache-2.0
#include "dump/threads.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dump/deadlocks.hpp"
#include "dump/syscalls.hpp"
#include "dump/waits.hpp"
#include "offcpu.h"
#include "pyebpf/error.hpp"
#include "python/process.hpp"
#include "trackers/common/event_fields.hpp"
#include "util/files.hpp"

namespace pyebpf::dump {
namespace {

// Leaf-first addresses to root-first frames: `frame(address, is_return_address)`.
template <typename Frame>
std::vector<stack::NativeFrame> root_first(const pyebpf_dump_native_stack& st, std::size_t max, Frame frame) {
  std::vector<stack::NativeFrame> out;
  const std::size_t depth = std::min<std::size_t>({st.depth, max, PYEBPF_DUMP_KERNEL_FRAMES});
  for (std::size_t i = depth; i > 0; --i) out.push_back(frame(st.ips[i - 1], i > 1));
  return out;
}

std::string py_problem(const pyebpf_py_stack& py) {
  switch (py.status) {
    case PYEBPF_STACK_OK:
      return py.truncated ? fmt::format("cut at {} frames", PYEBPF_MAX_FRAMES) : "";
    case PYEBPF_STACK_NO_TSTATE:
      return "not a Python thread (no thread state)";
    case PYEBPF_STACK_READ_FAULT:
      return "partial: the target's memory could not be read past here";
    case PYEBPF_STACK_FRAME_LOOP:
      return "partial: the frame chain loops";
    default:
      return "not read";
  }
}

}  // namespace

std::string state_name(std::uint32_t state, std::uint32_t exit_state, bool on_cpu) {
  if (exit_state & 0x20) return "zombie";  // EXIT_ZOMBIE
  if (exit_state & 0x10) return "dead";    // EXIT_DEAD
  if (on_cpu) return "running";
  if (state == PYEBPF_TASK_RUNNING) return "runnable";
  constexpr std::uint32_t idle = PYEBPF_TASK_UNINTERRUPTIBLE | PYEBPF_TASK_NOLOAD;
  if ((state & idle) == idle) return "idle";
  if (state & PYEBPF_TASK_PARKED) return "parked";
  if (state & PYEBPF_TASK_DEAD) return "dead";
  if (state & PYEBPF_TASK_TRACED) return "traced";
  if (state & PYEBPF_TASK_STOPPED) return "stopped";
  if (state & (PYEBPF_TASK_UNINTERRUPTIBLE | PYEBPF_TASK_RTLOCK_WAIT)) return "uninterruptible";
  if (state & PYEBPF_TASK_INTERRUPTIBLE) return "sleeping";
  return fmt::format("state {:#x}", state);
}

Dumper::Dumper(const bpf::SharedMaps& shared, const native::Kallsyms& kallsyms)
    : Dumper(std::make_unique<ThreadReader>(shared), kallsyms) {}
Dumper::Dumper(std::unique_ptr<ThreadReader> reader, const native::Kallsyms& kallsyms)
    : reader_(std::move(reader)), kallsyms_(kallsyms) {}
Dumper::~Dumper() = default;

native::NativeSymbolizer& Dumper::native(pid_t pid) {
  auto& sym = native_[pid];
  if (!sym) sym = std::make_unique<native::NativeSymbolizer>(pid, elf_files_);
  return *sym;
}

DumpedThread Dumper::decode(const pyebpf_thread_dump& rec, const trackers::Target& target) {
  DumpedThread t;
  t.raw = rec;
  const std::string comm = trackers::comm_text(rec.hdr.comm);
  auto name = rec.hdr.thread_id ? target.python->thread_names().name(rec.hdr.thread_id, rec.hdr.ns_tid) : std::nullopt;
  t.thread_name = name ? *name : comm;
  t.state = state_name(rec.state, rec.exit_state, rec.on_cpu);
  if (rec.since_kind != PYEBPF_DUMP_SINCE_UNKNOWN) t.state_ms = static_cast<double>(rec.since_ns) / 1e6;
  // Saved registers and kernel stack describe a thread that is off its CPU;
  // one running elsewhere has moved on from them.
  const bool blocked = !rec.on_cpu && rec.state != PYEBPF_TASK_RUNNING;
  if (blocked && rec.syscall >= 0) {
    auto known = syscall_name(rec.syscall);
    t.syscall = known.empty() ? fmt::format("syscall {}", rec.syscall) : std::string(known);
  }
  if (!rec.on_cpu)
    t.kernel_stack = root_first(rec.kstack, PYEBPF_DUMP_KERNEL_FRAMES,
                                [&](std::uint64_t addr, bool ret) { return kallsyms_.frame(ret ? addr - 1 : addr); });
  // Frame pointers lead into garbage in code built without them: keep the
  // frames that lie in mapped files, up to the first that does not.
  auto& sym = native(target.pid);
  std::vector<stack::NativeFrame> leaf_first;
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(rec.ustack.depth, PYEBPF_DUMP_USER_FRAMES); ++i) {
    auto frame = sym.frame(rec.ustack.ips[i], i > 0);
    if (frame.kind == stack::NativeFrame::Kind::Address) break;
    leaf_first.push_back(frame);
  }
  t.native_stack.assign(leaf_first.rbegin(), leaf_first.rend());
  for (std::size_t i = std::min<std::size_t>(rec.py.depth, PYEBPF_MAX_FRAMES); i > 0; --i)
    t.py_stack.push_back(target.python->symbolizer().resolve(rec.py.frames[i - 1]));
  t.py_problem = py_problem(rec.py);
  return t;
}

std::vector<DumpedProcess> Dumper::dump(const std::vector<const trackers::Target*>& targets,
                                        std::uint64_t min_blocked_ns) {
  const auto records = reader_->read(min_blocked_ns);
  std::vector<DumpedProcess> out;
  for (const trackers::Target* target : targets) {
    DumpedProcess p;
    p.pid = target->pid;
    p.comm = target->comm;
    p.python = target->python->name();
    {
      python::ProcessMemory::Batch batch(target->python->objects().memory());
      for (const auto& rec : records)
        if (static_cast<pid_t>(rec.hdr.pid) == target->pid) p.threads.push_back(decode(rec, *target));
    }
    std::sort(p.threads.begin(), p.threads.end(),
              [](const DumpedThread& a, const DumpedThread& b) { return a.raw.hdr.tid < b.raw.hdr.tid; });
    if (!process_exists(target->pid))
      p.problems.push_back("the process exited before its threads were read");
    else if (p.threads.empty() && !min_blocked_ns)
      p.problems.push_back("no thread could be read");
    name_waits(p, *target->python);
    out.push_back(std::move(p));
  }
  find_deadlocks(out);
  return out;
}

}  // namespace pyebpf::dump
