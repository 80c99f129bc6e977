// SPDX-License-Identifier: Apache-2.0
#pragma once

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

}  // namespace pyebpf
