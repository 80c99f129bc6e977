// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace pyebpf::net {

// A socket as /proc/PID/net/{tcp,tcp6,udp,udp6,unix} shows it.
struct ProcSocket {
  std::string protocol;  // "tcp", "tcp6", "udp", "udp6", "unix"
  std::string local;     // "127.0.0.1:8000", "[::1]:8000", a unix path ("" if unnamed)
  std::string peer;      // "" where there is none (listening, unix)
  std::string state;     // "ESTABLISHED", "LISTEN", ... (tcp); "" where the protocol has none
};

// The sockets of one /proc/PID/net/<protocol> file, by inode (0 and
// malformed lines skipped). `protocol` as in ProcSocket.
std::map<std::uint64_t, ProcSocket> parse_proc_sockets(std::string_view text, const std::string& protocol);

// Every socket of `pid`'s network namespace, by inode, from its
// /proc/PID/net files (those that cannot be read are skipped).
std::map<std::uint64_t, ProcSocket> read_proc_sockets(int pid);

}  // namespace pyebpf::net
