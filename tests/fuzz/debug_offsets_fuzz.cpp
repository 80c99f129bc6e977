// SPDX-License-Identifier: Apache-2.0
// The _Py_DebugOffsets reader on arbitrary bytes: 3.13+ targets describe
// their own layout at the start of _PyRuntime, in memory the target owns.
// Whatever it says, the row is either left alone or changed to values that
// passed validation, all or nothing.
// Input: the CPython minor whose table row to use (1 byte; any other value
// picks one of the rows that have a layout), the size of the target's
// _PyRuntime symbol (8, little-endian; 0: unknown), then _PyRuntime's bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "python/debug_offsets.hpp"

using namespace pyebpf::python;

namespace {

std::vector<const OffsetsRow*> rows_with_layout() {
  std::vector<const OffsetsRow*> rows;
  for (const OffsetsRow& row : OffsetsTable::embedded().rows()) {
    if (row.debug_offsets) rows.push_back(&row);
  }
  if (rows.empty()) std::abort();  // the table lost every _Py_DebugOffsets layout
  return rows;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<const OffsetsRow*> rows = rows_with_layout();
  constexpr std::size_t kHeader = 1 + 8;
  if (size < kHeader) return 0;
  const OffsetsRow* row = rows[data[0] % rows.size()];
  for (const OffsetsRow* r : rows) {
    if (r->python.minor == data[0]) row = r;
  }
  std::uint64_t runtime_size;
  std::memcpy(&runtime_size, data + 1, 8);
  std::span<const std::uint8_t> runtime(data + kHeader, size - kHeader);

  OffsetsRow applied = *row;
  auto result = apply_debug_offsets(applied, runtime, runtime_size, row->python);
  bool unchanged = applied.fields == row->fields && applied.sizes == row->sizes && applied.moved_by_target.empty();
  if (result.status != DebugOffsetsStatus::Applied && !unchanged) std::abort();  // refused, yet changed
  return 0;
}
