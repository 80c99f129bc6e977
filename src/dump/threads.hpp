// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dump/thread_reader.hpp"
#include "native/kallsyms.hpp"
#include "native/symbolizer.hpp"
#include "stack/frames.hpp"
#include "thread_dump.h"
#include "trackers/common/tracker.hpp"

namespace pyebpf::dump {

// What a thread that is not running waits on, as far as can be told.
struct Wait {
  // gil, lock, condition, thread (a join), socket, pipe, file, sleep, poll,
  // child, futex, disk, other;
  // "" for a thread that waits on nothing (running, runnable)
  std::string kind;
  std::string text;  // one line for people: "socket 127.0.0.1:8000 -> 127.0.0.1:51234 ESTABLISHED (recvfrom)"
  nlohmann::ordered_json object;  // its details for JSON: address, fd, local, peer, owner...; null if none
  std::uint64_t address = 0;      // what it waits on, where that is an address (futex word, lock object)
  std::uint64_t owner_ident = 0;  // the thread that holds it, as a pthread_t (threading.get_ident()), 0 if unknown
};

// One thread of a target at the moment of the dump.
struct DumpedThread {
  pyebpf_thread_dump raw;
  std::string thread_name;  // threading.Thread name, else the kernel's
  // running, runnable, sleeping (interruptible), uninterruptible (disk,
  // page faults), stopped, traced, zombie, dead, idle, parked
  std::string state;
  std::optional<double> state_ms;                // how long it has been in that state
  std::string syscall;                           // the system call it is in ("futex", "syscall 273"), "" if none
  std::vector<stack::NativeFrame> kernel_stack;  // root first
  std::vector<stack::NativeFrame> native_stack;  // root first
  std::vector<stack::PyFrame> py_stack;          // root first
  std::string py_problem;                        // why py_stack is empty or partial, "" if it is whole
  std::string gil;                               // "holds", "waits", "" (neither, or not known)
  bool in_gc = false;                            // the interpreter is collecting and this thread runs it
  Wait wait;
  std::optional<pid_t> waits_for;  // the thread (host tid) holding what this one waits on
  std::vector<pid_t> deadlock;     // the cycle of threads it is in (host tids, from it), empty if none
};

// One target at the moment of the dump.
struct DumpedProcess {
  pid_t pid = 0;
  std::string comm;
  std::string python;  // "CPython 3.11.2, /usr/bin/python3.11"
  std::vector<DumpedThread> threads;
  std::vector<std::string> problems;  // what could not be read, one line each
};

// Takes thread dumps of targets: one pass of the task iterator, then each
// record decoded with what is known of its process (symbols, thread names,
// GIL and GC state read from its memory) and its wait named.
class Dumper {
 public:
  // Kernel frames are named with `kallsyms`, which must outlive it.
  Dumper(const bpf::SharedMaps& shared, const native::Kallsyms& kallsyms);
  // With a reader loaded earlier (offcpu loads it at start, see BlockedThreads).
  Dumper(std::unique_ptr<ThreadReader> reader, const native::Kallsyms& kallsyms);
  ~Dumper();

  // Every thread of `targets` (each already in py_procs) now, or with
  // `min_blocked_ns` only those blocked at least that long. A target that
  // ended meanwhile gives what was read of it before, with a problem line.
  std::vector<DumpedProcess> dump(const std::vector<const trackers::Target*>& targets,
                                  std::uint64_t min_blocked_ns = 0);

 private:
  native::NativeSymbolizer& native(pid_t pid);
  DumpedThread decode(const pyebpf_thread_dump& rec, const trackers::Target& target);

  std::unique_ptr<ThreadReader> reader_;
  const native::Kallsyms& kallsyms_;
  native::ElfCache elf_files_;
  std::map<pid_t, std::unique_ptr<native::NativeSymbolizer>> native_;
};

// "sleeping", "uninterruptible"...: what a task's raw state bits say.
std::string state_name(std::uint32_t state, std::uint32_t exit_state, bool on_cpu);

}  // namespace pyebpf::dump
