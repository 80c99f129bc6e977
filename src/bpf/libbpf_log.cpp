// SPDX-License-Identifier: Apache-2.0
#include "bpf/libbpf_log.hpp"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace pyebpf::bpf {
namespace {

int forward(enum libbpf_print_level level, const char* format, va_list args) {
  char buf[4096];
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  std::string msg(buf, n > 0 ? std::min<std::size_t>(static_cast<std::size_t>(n), sizeof(buf) - 1) : 0);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  switch (level) {
    case LIBBPF_WARN: spdlog::warn("libbpf: {}", msg); break;
    case LIBBPF_INFO: spdlog::debug("libbpf: {}", msg); break;
    default: spdlog::trace("libbpf: {}", msg); break;
  }
  return n;
}

}  // namespace

void install_libbpf_logger() { libbpf_set_print(forward); }

}  // namespace pyebpf::bpf
