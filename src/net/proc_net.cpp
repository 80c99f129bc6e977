// SPDX-License-Identifier: Apache-2.0
#include "net/proc_net.hpp"

#include <charconv>
#include <sstream>
#include <vector>

namespace pyebpf::net {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> fields_of(std::string_view line) {
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
std::optional<T> number(std::string_view s, int base = 10) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::map<std::string, InterfaceCounters> parse_net_dev(std::string_view text) {
  std::map<std::string, InterfaceCounters> out;
  for (auto line : lines_of(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos || line.find('|') != std::string_view::npos) continue;  // headers
    auto names = fields_of(line.substr(0, colon));
    auto f = fields_of(line.substr(colon + 1));
    if (names.size() != 1 || f.size() < 16) continue;
    std::uint64_t v[16];
    bool ok = true;
    for (int i = 0; i < 16 && ok; ++i) {
      auto n = number<std::uint64_t>(f[static_cast<std::size_t>(i)]);
      ok = n.has_value();
      v[i] = n.value_or(0);
    }
    if (!ok) continue;
    // rx: bytes packets errs drop fifo frame compressed multicast | tx: bytes packets errs drop ...
    out[std::string(names[0])] = {v[0], v[1], v[2], v[3], v[8], v[9], v[10], v[11]};
  }
  return out;
}

std::optional<std::string> default_route_interface(std::string_view route, std::string_view ipv6_route) {
  std::optional<std::string> best;
  std::uint32_t best_metric = 0;
  for (auto line : lines_of(route)) {
    // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT
    auto f = fields_of(line);
    if (f.size() < 8 || f[1] != "00000000" || f[7] != "00000000") continue;
    auto flags = number<std::uint32_t>(f[3], 16);
    auto metric = number<std::uint32_t>(f[6]);
    if (!flags || !(*flags & 0x1) || !metric) continue;  // RTF_UP
    if (!best || *metric < best_metric) {
      best = std::string(f[0]);
      best_metric = *metric;
    }
  }
  if (best) return best;
  for (auto line : lines_of(ipv6_route)) {
    // dest dest_len src src_len next_hop metric refcnt use flags iface
    auto f = fields_of(line);
    if (f.size() < 10 || f[0] != "00000000000000000000000000000000" || f[1] != "00") continue;
    auto metric = number<std::uint32_t>(f[5], 16);
    if (!metric || f[9] == "lo") continue;  // lo holds the unreachable default of a namespace without one
    if (!best || *metric < best_metric) {
      best = std::string(f[9]);
      best_metric = *metric;
    }
  }
  return best;
}

std::int64_t parse_max_open_files(std::string_view limits) {
  for (auto line : lines_of(limits)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    auto f = fields_of(line.substr(14));
    if (f.empty()) return -1;
    return number<std::int64_t>(f[0]).value_or(-1);  // "unlimited" -> -1
  }
  return -1;
}

PortRange parse_port_range(std::string_view text) {
  auto f = fields_of(lines_of(text).empty() ? std::string_view{} : lines_of(text)[0]);
  PortRange r;
  if (f.size() != 2) return r;
  auto lo = number<std::uint32_t>(f[0]), hi = number<std::uint32_t>(f[1]);
  if (!lo || !hi || *lo > *hi) return r;
  return {*lo, *hi};
}

}  // namespace pyebpf::net
