// SPDX-License-Identifier: Apache-2.0
// Finding a line of text output (the report, `pyebpf top`'s view) with runs
// of spaces squashed to one, so assertions name values, not column widths.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace pyebpf::test {

inline std::string squashed(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// The first of `lines` that contains `needle` once squashed (empty if none).
inline std::string line_with(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    std::string s = squashed(l);
    if (s.find(needle) != std::string::npos) return s;
  }
  return {};
}

inline std::string line_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return line_with(lines, needle);
}

}  // namespace pyebpf::test
