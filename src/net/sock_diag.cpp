// SPDX-License-Identifier: Apache-2.0
#include "net/sock_diag.hpp"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"

namespace pyebpf::net {
namespace {

void dump_family(int fd, std::uint8_t family, std::vector<TcpSocket>& out) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = family;
  msg.req.sdiag_family = family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;  // every state, TIME_WAIT and NEW_SYN_RECV included
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0)
    throw Error(errno_text("sock_diag: send dump request", errno));

  alignas(nlmsghdr) static thread_local char buf[64 * 1024];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(errno_text("sock_diag: receive", errno));
    }
    auto len = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE) return;
      if (h->nlmsg_type == NLMSG_ERROR) {
        auto* err = static_cast<nlmsgerr*>(NLMSG_DATA(h));
        // No IPv6 in this kernel/namespace: nothing to count.
        if (err->error == -ENOENT || err->error == -EAFNOSUPPORT) return;
        throw Error(errno_text("sock_diag: dump", -err->error));
      }
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
      auto* m = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
      TcpSocket s;
      s.family = m->idiag_family;
      s.state = m->idiag_state;
      s.local_port = ntohs(m->id.idiag_sport);
      s.remote_port = ntohs(m->id.idiag_dport);
      std::size_t bytes = s.family == AF_INET6 ? 16 : 4;
      std::memcpy(s.local.data(), m->id.idiag_src, bytes);
      std::memcpy(s.remote.data(), m->id.idiag_dst, bytes);
      out.push_back(s);
    }
  }
}

bool v4_mapped(const std::array<std::uint8_t, 16>& a) {
  static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a.data(), prefix, sizeof(prefix)) == 0;
}

}  // namespace

std::vector<TcpSocket> dump_tcp_sockets() {
  Fd fd(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!fd) throw Error(errno_text("socket(NETLINK_SOCK_DIAG)", errno));
  std::vector<TcpSocket> out;
  dump_family(fd.get(), AF_INET, out);
  dump_family(fd.get(), AF_INET6, out);
  return out;
}

std::string format_address(std::uint8_t family, const std::array<std::uint8_t, 16>& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (family == AF_INET6 && !v4_mapped(addr)) {
    inet_ntop(AF_INET6, addr.data(), text, sizeof(text));
  } else {
    inet_ntop(AF_INET, family == AF_INET6 ? addr.data() + 12 : addr.data(), text, sizeof(text));
  }
  return text;
}

std::string format_endpoint(std::uint8_t family, const std::array<std::uint8_t, 16>& addr, std::uint16_t port) {
  std::string host = format_address(family, addr);
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

}  // namespace pyebpf::net
