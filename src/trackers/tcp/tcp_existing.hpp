// SPDX-License-Identifier: Apache-2.0
// TCP sockets a target already held when tracing started. BPF learns a
// socket's owner when it is connected, accepted or put in listen state; for
// the ones that predate pyebpf (a server's listener, a pooled database
// connection) user space names them by inode here and a BPF iterator over the
// kernel's TCP sockets turns the inodes into socket pointers.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "pyebpf/fd.hpp"

namespace pyebpf::trackers::tcp {

struct ExistingSocket {
  std::uint64_t inode = 0;        // sockfs inode, as in /proc/PID/fd -> socket:[inode]
  std::uint64_t netns_inode = 0;  // its network namespace
  Fd netns;                       // that namespace, to iterate its sockets from inside
};

// The AF_INET/AF_INET6 TCP sockets open in `pid` now. Each socket is borrowed
// with pidfd_getfd() just long enough to ask its protocol and namespace
// (SIOCGSKNS); sockets that cannot be borrowed (old kernel, no permission) are
// assumed to live in the process's own network namespace.
std::vector<ExistingSocket> existing_tcp_sockets(pid_t pid, int pidfd);

// Runs `fn` in network namespace `netns`, on a thread of its own (the calling
// thread never changes namespace), and waits for it; rethrows what `fn`
// throws. Throws pyebpf::Error if it cannot enter.
void in_netns(int netns, const std::function<void()>& fn);

}  // namespace pyebpf::trackers::tcp
