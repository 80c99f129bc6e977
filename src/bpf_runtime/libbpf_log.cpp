// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/libbpf_log.hpp"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace pyebpf::bpf {
namespace {

int forward(enum libbpf_print_level level, const char* format, va_list args) {
  // Verifier logs arrive as one message of up to megabytes: keep all of it.
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string msg(n > 0 ? static_cast<std::size_t>(n) + 1 : 1, '\0');
  n = std::vsnprintf(msg.data(), msg.size(), format, args);
  msg.resize(n > 0 ? std::min(static_cast<std::size_t>(n), msg.size() - 1) : 0);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  switch (level) {
    case LIBBPF_WARN:
      spdlog::warn("libbpf: {}", msg);
      break;
    case LIBBPF_INFO:
      spdlog::debug("libbpf: {}", msg);
      break;
    default:
      spdlog::trace("libbpf: {}", msg);
      break;
  }
  return n;
}

}  // namespace

void install_libbpf_logger() {
  libbpf_set_print(forward);
}

}  // namespace pyebpf::bpf
