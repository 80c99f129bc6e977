// SPDX-License-Identifier: Apache-2.0
// Test suites parameterised by offsets-table row label ("debian-3.14.10-1").
#pragma once

#include <cctype>
#include <string>
#include <vector>

#include "python/offsets.hpp"

namespace pyebpf::python {

// Rows of 3.13+ builds (with _Py_DebugOffsets): one pyenv build, and Debian
// sid's three as tools/install-sid-root found them when the table was made.
inline const std::vector<std::string> kRowsWithDebugOffsets = {"pyenv-3.13.0", "debian-3.13.18-1", "debian-3.14.10-1",
                                                               "debian-3.15.2-1"};

// gtest parameter name of a row label: "debian_3_14_10_1".
inline std::string row_test_name(std::string label) {
  for (char& c : label) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return label;
}

// A copy of the embedded table's row with this label (empty if none).
inline OffsetsRow embedded_row(const std::string& label) {
  for (const auto& row : OffsetsTable::embedded().rows()) {
    if (row.label == label) return row;
  }
  return {};
}

}  // namespace pyebpf::python
