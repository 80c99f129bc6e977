// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp/tcp_existing.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cerrno>
#include <exception>
#include <string>
#include <thread>

#include "pyebpf/error.hpp"

namespace pyebpf::trackers::tcp {
namespace {

std::uint64_t inode_of(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

bool is_inet_tcp(int fd) {
  int domain = 0, protocol = 0;
  socklen_t len = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len)) return false;
  len = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len)) return false;
  return (domain == AF_INET || domain == AF_INET6) && protocol == IPPROTO_TCP;
}

}  // namespace

std::vector<ExistingSocket> existing_tcp_sockets(pid_t pid, int pidfd) {
  std::vector<ExistingSocket> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  int borrow_errno = 0;
  while (dirent* entry = readdir(d)) {
    char target[64] = {};
    std::string path = dir + "/" + entry->d_name;
    ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string link(target, static_cast<std::size_t>(n));
    if (link.rfind("socket:[", 0) != 0) continue;
    ExistingSocket s;
    s.inode = std::stoull(link.substr(8));
    int fd = std::atoi(entry->d_name);
    Fd borrowed(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0)));
    if (borrowed) {
      if (!is_inet_tcp(borrowed.get())) continue;
      s.netns = Fd(ioctl(borrowed.get(), SIOCGSKNS));
    } else {
      borrow_errno = errno;
    }
    if (!s.netns) s.netns = Fd(open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
    if (!s.netns) continue;
    s.netns_inode = inode_of(s.netns.get());
    out.push_back(std::move(s));
  }
  closedir(d);
  if (borrow_errno)
    spdlog::debug("tcp: pid {}: some sockets could not be borrowed (pidfd_getfd: {}); assuming its own netns", pid,
                  strerror(borrow_errno));
  return out;
}

void in_netns(int netns, const std::function<void()>& fn) {
  // A thread of its own, which ends in that namespace: the caller's thread
  // never leaves pyebpf's, so no failed return can leave it (and the sinks'
  // connections it makes later) in a target's.
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      if (setns(netns, CLONE_NEWNET)) throw Error(errno_text("setns(CLONE_NEWNET)", errno));
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace pyebpf::trackers::tcp
