// SPDX-License-Identifier: Apache-2.0
// The _Py_DebugOffsets reader on arbitrary bytes: 3.13+ targets describe
// their own layout at the start of _PyRuntime, in memory the target owns.
// Whatever it says, the row is either left alone or changed to values that
// passed validation, all or nothing.
// Input: the CPython minor whose table row to use (1 byte; any other value
// picks one of the rows that have a layout), then the bytes of _PyRuntime.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "python/debug_offsets.hpp"

using namespace pyebpf::python;

namespace {

std::vector<const OffsetsRow*> rows_with_layout() {
  std::vector<const OffsetsRow*> rows;
  for (int minor = 0; minor < 100; ++minor) {
    const OffsetsRow* row = OffsetsTable::embedded().find(3, minor);
    if (row && row->debug_offsets) rows.push_back(row);
  }
  if (rows.empty()) std::abort();  // the table lost every _Py_DebugOffsets layout
  return rows;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<const OffsetsRow*> rows = rows_with_layout();
  if (size < 1) return 0;
  const int minor = data[0];
  const OffsetsRow* row = OffsetsTable::embedded().find(3, minor);
  if (!row || !row->debug_offsets) row = rows[static_cast<std::size_t>(minor) % rows.size()];
  std::span<const std::uint8_t> runtime(data + 1, size - 1);

  OffsetsRow applied = *row;
  PyVersion version{3, std::stoi(row->minor.substr(2)), 0, ""};
  if (!apply_debug_offsets(applied, runtime, version)) {
    if (applied.fields != row->fields || applied.sizes != row->sizes) std::abort();  // refused, yet changed
  }
  return 0;
}
