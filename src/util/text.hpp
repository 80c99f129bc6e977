// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pyebpf {

// Splits the next field off `line`: skips leading separators, returns the run
// of non-separators that follows and leaves `line` just after it. Empty when
// nothing is left. For the whitespace-separated text of /proc files.
inline std::string_view next_field(std::string_view& line, std::string_view separators = " ") {
  std::size_t start = line.find_first_not_of(separators);
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  std::size_t end = line.find_first_of(separators);
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

// "0x7f3a..." for addresses in messages.
inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace pyebpf
