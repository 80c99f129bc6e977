// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pyebpf::python {

struct BitField {
  unsigned bit = 0;
  unsigned width = 0;
};

// Where a 3.13+ interpreter's own _Py_DebugOffsets (at the start of
// _PyRuntime) stores the value of each logical field / type size.
struct DebugOffsetsLayout {
  std::uint32_t size = 0;                                    // sizeof(_Py_DebugOffsets)
  std::uint32_t cookie_at = 0;                               // "xdebugpy"
  std::uint32_t version_at = 0;                              // PY_VERSION_HEX
  std::map<std::string, std::uint32_t, std::less<>> fields;  // logical field -> position
  std::map<std::string, std::uint32_t, std::less<>> sizes;   // type -> position
};

// One row of offsets/cpython.json: the layout of one CPython minor version,
// derived from the DWARF of a real build by tools/gen-offsets.
struct OffsetsRow {
  std::string minor;         // "3.11"
  std::string derived_from;  // "3.11.7 (versions/3.11.7/lib/libpython3.11.so.1.0, build-id ...)"
  std::map<std::string, std::uint32_t, std::less<>> fields;
  std::map<std::string, std::string, std::less<>> members;  // logical field -> C member path it came from
  std::map<std::string, std::uint64_t, std::less<>> sizes;
  std::map<std::string, BitField, std::less<>> bits;
  std::map<std::string, std::int64_t, std::less<>> constants;
  std::optional<DebugOffsetsLayout> debug_offsets;  // 3.13+

  std::optional<std::uint32_t> field(std::string_view name) const;
  // The field, or pyebpf::Error naming the version and the missing field.
  std::uint32_t require(std::string_view name) const;
  std::optional<std::uint64_t> size(std::string_view type) const;
  std::optional<BitField> bit(std::string_view name) const;
  std::optional<std::int64_t> constant(std::string_view name) const;
  // C member path the field was derived from ("" if absent).
  std::string member(std::string_view name) const;
};

class OffsetsTable {
 public:
  // Parses the JSON table; throws pyebpf::Error on malformed data.
  static OffsetsTable parse(std::string_view json);
  // The table embedded in this binary at build time.
  static const OffsetsTable& embedded();

  const OffsetsRow* find(int major, int minor) const;
  std::vector<std::string> minors() const;  // "3.8", ..., in version order
  std::string minors_text() const;          // "3.8, 3.9, ..."

 private:
  std::vector<OffsetsRow> rows_;
};

}  // namespace pyebpf::python
