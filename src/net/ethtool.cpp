// SPDX-License-Identifier: Apache-2.0
#include "net/ethtool.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "pyebpf/fd.hpp"

namespace pyebpf::net {
namespace {

bool ethtool(int fd, const std::string& iface, void* data) {
  ifreq ifr{};
  if (iface.size() >= sizeof(ifr.ifr_name)) return false;
  std::memcpy(ifr.ifr_name, iface.c_str(), iface.size() + 1);
  ifr.ifr_data = static_cast<char*>(data);
  return ioctl(fd, SIOCETHTOOL, &ifr) == 0;
}

Fd control_socket() {
  return Fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

}  // namespace

std::optional<std::string> ethtool_driver(const std::string& iface) {
  Fd fd = control_socket();
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (!fd || !ethtool(fd.get(), iface, &info)) return std::nullopt;
  std::string driver(info.driver, strnlen(info.driver, sizeof(info.driver)));
  if (driver.empty()) return std::nullopt;
  return driver;
}

std::map<std::string, std::uint64_t> ethtool_stats(const std::string& iface) {
  std::map<std::string, std::uint64_t> out;
  Fd fd = control_socket();
  if (!fd) return out;

  // How many statistics: GSSET_INFO for the ETH_SS_STATS set.
  // ethtool_sset_info is followed by one u32 per set asked for.
  alignas(ethtool_sset_info) std::uint8_t sset_buf[sizeof(ethtool_sset_info) + sizeof(std::uint32_t)] = {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  if (!ethtool(fd.get(), iface, sset) || !(sset->sset_mask & (1ULL << ETH_SS_STATS))) return out;
  std::uint32_t n;
  std::memcpy(&n, sset_buf + sizeof(ethtool_sset_info), sizeof(n));
  if (n == 0 || n > 65536) return out;

  std::vector<std::uint8_t> strings(sizeof(ethtool_gstrings) + static_cast<std::size_t>(n) * ETH_GSTRING_LEN);
  auto* gs = reinterpret_cast<ethtool_gstrings*>(strings.data());
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = n;
  if (!ethtool(fd.get(), iface, gs)) return out;

  std::vector<std::uint8_t> values(sizeof(struct ethtool_stats) + static_cast<std::size_t>(n) * sizeof(std::uint64_t));
  auto* st = reinterpret_cast<struct ethtool_stats*>(values.data());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = n;
  if (!ethtool(fd.get(), iface, st)) return out;

  std::uint32_t count = std::min(n, std::min(gs->len, st->n_stats));
  for (std::uint32_t i = 0; i < count; ++i) {
    const char* name = reinterpret_cast<const char*>(gs->data) + static_cast<std::size_t>(i) * ETH_GSTRING_LEN;
    std::uint64_t v;
    std::memcpy(&v, reinterpret_cast<const std::uint8_t*>(st->data) + i * sizeof(std::uint64_t), sizeof(v));
    out[std::string(name, strnlen(name, ETH_GSTRING_LEN))] = v;
  }
  return out;
}

}  // namespace pyebpf::net
