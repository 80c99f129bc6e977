// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pyebpf {

// Whole contents of a (small, procfs or sysfs) file; nullopt if unreadable.
std::optional<std::string> read_text_file(const std::string& path);

// Kernel name of a thread (/proc/PID/task/TID/comm) without the newline; "" if gone.
std::string read_comm(pid_t pid, pid_t tid);

// The pid in the process's innermost pid namespace (last NSpid field of
// /proc/PID/status), or pid.
std::uint32_t container_pid_of(pid_t pid);

bool path_exists(const std::string& path);

// True while /proc/PID exists.
bool process_exists(pid_t pid);

// The processes `pid`'s threads forked and have not been reaped
// (/proc/PID/task/*/children); empty if it is gone.
std::vector<pid_t> children_of(pid_t pid);

}  // namespace pyebpf
