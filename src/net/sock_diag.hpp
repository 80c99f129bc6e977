// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pyebpf::net {

// Kernel TCP states (include/net/tcp_states.h).
enum TcpState : std::uint8_t {
  kTcpEstablished = 1,
  kTcpSynSent = 2,
  kTcpSynRecv = 3,
  kTcpFinWait1 = 4,
  kTcpFinWait2 = 5,
  kTcpTimeWait = 6,
  kTcpClose = 7,
  kTcpCloseWait = 8,
  kTcpLastAck = 9,
  kTcpListen = 10,
  kTcpClosing = 11,
  kTcpNewSynRecv = 12,  // request socket (reported by sock_diag as SYN_RECV)
};

struct TcpSocket {
  std::uint8_t family = 0;  // AF_INET or AF_INET6
  std::uint8_t state = 0;   // TcpState
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;
  std::array<std::uint8_t, 16> local{};  // IPv4: the first 4 bytes
  std::array<std::uint8_t, 16> remote{};
};

// Every TCP socket (IPv4 and IPv6, every state including TIME_WAIT and
// request sockets) of the calling thread's network namespace, from one
// NETLINK_SOCK_DIAG inet_diag dump per family. Throws pyebpf::Error.
std::vector<TcpSocket> dump_tcp_sockets();

// "10.0.0.5", "2001:db8::1"; an IPv4-mapped IPv6 address prints as IPv4.
std::string format_address(std::uint8_t family, const std::array<std::uint8_t, 16>& addr);
// "10.0.0.5:443", "[2001:db8::1]:443".
std::string format_endpoint(std::uint8_t family, const std::array<std::uint8_t, 16>& addr, std::uint16_t port);

}  // namespace pyebpf::net
