// SPDX-License-Identifier: Apache-2.0
#include "trackers/tcp/tcp_format.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <cerrno>
#include <cstring>

#include "tcp.h"

namespace pyebpf::trackers::tcp {
namespace {

constexpr int kTcpEstablished = 1;
constexpr int kTcpClose = 7;

}  // namespace

std::string format_ip(const std::uint8_t* addr, std::uint16_t family) {
  char buf[INET6_ADDRSTRLEN] = {};
  int af = family == PYEBPF_AF_INET ? AF_INET : AF_INET6;
  if (family != PYEBPF_AF_INET && family != PYEBPF_AF_INET6) return "";
  if (!inet_ntop(af, addr, buf, sizeof(buf))) return "";
  return buf;
}

std::string family_name(std::uint16_t family) {
  if (family == PYEBPF_AF_INET) return "AF_INET";
  if (family == PYEBPF_AF_INET6) return "AF_INET6";
  return "AF_" + std::to_string(family);
}

std::string state_name(int state) {
  static const char* const names[] = {nullptr,     "ESTABLISHED", "SYN_SENT",    "SYN_RECV",   "FIN_WAIT1",
                                      "FIN_WAIT2", "TIME_WAIT",   "CLOSE",       "CLOSE_WAIT", "LAST_ACK",
                                      "LISTEN",    "CLOSING",     "NEW_SYN_RECV"};
  if (state > 0 && state < static_cast<int>(std::size(names))) return names[state];
  return "STATE_" + std::to_string(state);
}

std::string ca_state_name(int state) {
  static const char* const names[] = {"Open", "Disorder", "CWR", "Recovery", "Loss"};
  if (state >= 0 && state < static_cast<int>(std::size(names))) return names[state];
  return "CA_" + std::to_string(state);
}

std::string loss_event_name(int type) {
  switch (type) {
    case PYEBPF_LOSS_RETRANSMIT:
      return "retransmit";
    case PYEBPF_LOSS_SYNACK_RETRANSMIT:
      return "synack_retransmit";
    case PYEBPF_LOSS_SEND_RST:
      return "send_rst";
    case PYEBPF_LOSS_RECV_RST:
      return "recv_rst";
    case PYEBPF_LOSS_ZERO_WINDOW:
      return "zero_window";
    case PYEBPF_LOSS_LOSS:
      return "loss";
    case PYEBPF_LOSS_RECOVERY:
      return "recovery";
    default:
      return "type_" + std::to_string(type);
  }
}

std::string errno_name(int err) {
  if (const char* name = strerrorname_np(err)) return name;
  return "E" + std::to_string(err);
}

ConnectOutcome classify_connect(int new_state, int sk_err, std::uint16_t src_port, bool in_connecting_thread) {
  if (new_state == kTcpEstablished) return {"success", std::nullopt};
  if (new_state != kTcpClose) return {"error", "STATE_" + std::to_string(new_state)};
  switch (sk_err) {
    case ECONNREFUSED:
      return {"refused", errno_name(sk_err)};  // RST answered the SYN
    case ETIMEDOUT:
      return {"timeout", errno_name(sk_err)};  // SYN retries exhausted
    case 0:
      // tcp_v4/v6_connect() set SYN_SENT before picking a local port; failing
      // there (in the connect() call itself) leaves no port and no sk_err: the
      // caller got EADDRNOTAVAIL, no free ephemeral port.
      if (src_port == 0 && in_connecting_thread) return {"error", "EADDRNOTAVAIL"};
      // Closed (or disconnected) by the application before the handshake
      // finished: typically an application-level connect timeout.
      return {"aborted", std::nullopt};
    default:
      return {"error", errno_name(sk_err)};  // EHOSTUNREACH, ENETUNREACH (ICMP), ...
  }
}

std::optional<std::array<std::uint8_t, 16>> parse_filter_ip(std::string_view text) {
  std::string s(text);
  std::array<std::uint8_t, 16> out{};
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    out[10] = 0xff;
    out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  if (inet_pton(AF_INET6, s.c_str(), out.data()) == 1) return out;
  return std::nullopt;
}

}  // namespace pyebpf::trackers::tcp
