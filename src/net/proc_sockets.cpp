// SPDX-License-Identifier: Apache-2.0
#include "net/proc_sockets.hpp"

#include <array>
#include <charconv>
#include <vector>

#include "net/sock_diag.hpp"
#include "util/files.hpp"

namespace pyebpf::net {
namespace {

constexpr const char* kTcpStates[] = {"",          "ESTABLISHED", "SYN_SENT",    "SYN_RECV",   "FIN_WAIT1",
                                      "FIN_WAIT2", "TIME_WAIT",   "CLOSE",       "CLOSE_WAIT", "LAST_ACK",
                                      "LISTEN",    "CLOSING",     "NEW_SYN_RECV"};

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <typename T>
bool parse_number(std::string_view text, T& out, int base) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// "0100007F:1F40" (IPv4: one 32-bit word in host order) or 32 hex digits
// (IPv6: four such words) and a port, both hex.
bool parse_endpoint(std::string_view text, bool v6, std::string& out) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view addr = text.substr(0, colon);
  std::uint16_t port = 0;
  if (!parse_number(text.substr(colon + 1), port, 16) || addr.size() != (v6 ? 32u : 8u)) return false;
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t word = 0; word < addr.size() / 8; ++word) {
    std::uint32_t value = 0;
    if (!parse_number(addr.substr(word * 8, 8), value, 16)) return false;
    for (int b = 0; b < 4; ++b) bytes[word * 4 + b] = static_cast<std::uint8_t>(value >> (8 * b));  // little endian
  }
  out = format_endpoint(v6 ? 10 /* AF_INET6 */ : 2 /* AF_INET */, bytes, port);
  return true;
}

}  // namespace

std::map<std::uint64_t, ProcSocket> parse_proc_sockets(std::string_view text, const std::string& protocol) {
  std::map<std::uint64_t, ProcSocket> out;
  const bool unix_socket = protocol == "unix";
  const bool v6 = protocol.back() == '6';
  bool header = true;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (header) {
      header = false;
      continue;
    }
    auto f = fields(line);
    std::uint64_t inode = 0;
    ProcSocket s;
    s.protocol = protocol;
    if (unix_socket) {
      // Num RefCount Protocol Flags Type St Inode [Path]
      if (f.size() < 7 || !parse_number(f[6], inode, 10)) continue;
      if (f.size() > 7) s.local = std::string(f[7]);
    } else {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      unsigned state = 0;
      if (f.size() < 10 || !parse_number(f[9], inode, 10) || !parse_number(f[3], state, 16)) continue;
      if (!parse_endpoint(f[1], v6, s.local) || !parse_endpoint(f[2], v6, s.peer)) continue;
      if (protocol.rfind("tcp", 0) == 0) {
        s.state = state < std::size(kTcpStates) ? kTcpStates[state] : "?";
        if (state == kTcpListen) s.peer.clear();
      } else if (s.peer.ends_with(":0")) {
        s.peer.clear();  // an unconnected UDP socket
      }
    }
    if (inode) out.emplace(inode, std::move(s));
  }
  return out;
}

std::map<std::uint64_t, ProcSocket> read_proc_sockets(int pid) {
  std::map<std::uint64_t, ProcSocket> out;
  for (const char* protocol : {"tcp", "tcp6", "udp", "udp6", "unix"}) {
    auto text = read_text_file("/proc/" + std::to_string(pid) + "/net/" + protocol);
    if (!text) continue;
    out.merge(parse_proc_sockets(*text, protocol));
  }
  return out;
}

}  // namespace pyebpf::net
