// SPDX-License-Identifier: Apache-2.0
// Every line-table decoder (3.8/3.9 co_lnotab, 3.10 co_linetable, 3.11+
// location table) on arbitrary tables, first lines and offsets: the table is
// copied out of the target's code object.
// Input: format (1 byte: 0 lnotab, 1 3.10, 2 3.11+, modulo 3), co_firstlineno
// (4, little-endian), instruction offset (8, little-endian), then the table.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "python/line_table.hpp"

using namespace pyebpf::python;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr LineTableFormat kFormats[] = {LineTableFormat::Lnotab, LineTableFormat::Linetable310,
                                          LineTableFormat::Locations311};
  constexpr std::size_t kHeader = 1 + 4 + 8;
  if (size < kHeader) return 0;
  LineTableFormat format = kFormats[data[0] % 3];
  std::int32_t first_line;
  std::int64_t offset;
  std::memcpy(&first_line, data + 1, 4);
  std::memcpy(&offset, data + 5, 8);
  std::span<const std::uint8_t> table(data + kHeader, size - kHeader);
  // The asked offset, then the start, the middle and just past the end of a
  // table as long as the code it describes could be.
  const auto span = static_cast<std::int64_t>(table.size()) * 16;
  for (std::int64_t at : {offset, std::int64_t{0}, span / 2, span}) {
    auto line = line_for_offset(format, table, first_line, at);
    if (line && *line < 0) std::abort();  // documented: never a negative line
  }
  return 0;
}
