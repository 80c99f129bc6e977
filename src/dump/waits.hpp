// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "dump/threads.hpp"
#include "net/proc_sockets.hpp"

namespace pyebpf::python {
class PythonProcess;
}

namespace pyebpf::dump {

// Names what each blocked thread of `p` waits on (the system call it is in
// and its arguments: a futex, a file descriptor, a sleep's length), marks the
// GIL's holder and waiters and the thread running a collection, and sets
// waits_for where the holder of what a thread waits on is known. What cannot
// be read goes to p.problems.
void name_waits(DumpedProcess& p, const python::PythonProcess& python);

// What file descriptor `fd` of `pid` is, for a wait on it: kind (socket,
// pipe, file, other) and a line of text; `sockets` is filled on first use.
struct FdTarget {
  std::string kind;
  std::string text;
  nlohmann::ordered_json object;
};
std::optional<FdTarget> describe_fd(pid_t pid, int fd,
                                    std::optional<std::map<std::uint64_t, net::ProcSocket>>& sockets);

// "10.0 s", "250 ms", "1.5 min": a duration for people.
std::string human_duration(double ms);

}  // namespace pyebpf::dump
