// SPDX-License-Identifier: Apache-2.0
// Pure helpers of the TCP trackers: names of kernel constants, address text,
// the connect outcome rule. No BPF, no I/O: unit-tested.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pyebpf::trackers::tcp {

// "127.0.0.1", "::1", "::ffff:10.0.0.1". family is AF_INET or AF_INET6; an
// AF_INET address is in the first 4 bytes.
std::string format_ip(const std::uint8_t* addr, std::uint16_t family);

// "AF_INET", "AF_INET6", else "AF_<n>".
std::string family_name(std::uint16_t family);

// Kernel TCP state names (include/net/tcp_states.h): "ESTABLISHED" ... "NEW_SYN_RECV", else "STATE_<n>".
std::string state_name(int state);

// Congestion-avoidance states (enum tcp_ca_state): "Open", "Disorder", "CWR", "Recovery", "Loss".
std::string ca_state_name(int state);

// tcp_loss `event` names by enum pyebpf_tcp_loss_type.
std::string loss_event_name(int type);

// "ECONNREFUSED"; "E<n>" for numbers without a name.
std::string errno_name(int err);

struct ConnectOutcome {
  std::string outcome;               // success, refused, timeout, aborted, error
  std::optional<std::string> error;  // errno name, when there is one
};

// The outcome of an outbound handshake from what the kernel left on the
// socket when it left SYN_SENT: the new state, sk_err, the local port, and
// whether the transition ran in the connecting thread itself.
ConnectOutcome classify_connect(int new_state, int sk_err, std::uint16_t src_port, bool in_connecting_thread);

// Parses an IPv4 or IPv6 address into the 16-byte form BPF compares with
// (IPv4 as v4-mapped IPv6). nullopt if it is not an address.
std::optional<std::array<std::uint8_t, 16>> parse_filter_ip(std::string_view text);

}  // namespace pyebpf::trackers::tcp
