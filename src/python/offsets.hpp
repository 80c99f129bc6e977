// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "python/version.hpp"

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
  std::optional<std::uint32_t> free_threaded_at;             // non-zero in free-threaded builds
  std::map<std::string, std::uint32_t, std::less<>> fields;  // logical field -> position
  std::map<std::string, std::uint32_t, std::less<>> sizes;   // type -> position
};

// One row of offsets/cpython.json: the layout of one CPython build (a pyenv
// build, a Debian package...), derived from its DWARF by tools/gen-offsets.
struct OffsetsRow {
  std::string label;         // "pyenv-3.11.7", "debian-3.14.10-1"
  std::string minor;         // "3.11"
  PyVersion python;          // 3.11.7
  std::string build_id;      // GNU build-id of the file the row was derived from
  std::string derived_from;  // "3.11.7 (versions/3.11.7/lib/libpython3.11.so.1.0, pyenv, build-id ...)"
  std::map<std::string, std::uint32_t, std::less<>> fields;
  std::map<std::string, std::string, std::less<>> members;  // logical field -> C member path it came from
  std::map<std::string, std::uint64_t, std::less<>> sizes;
  std::map<std::string, BitField, std::less<>> bits;
  std::map<std::string, std::int64_t, std::less<>> constants;
  std::map<std::string, std::uint32_t, std::less<>> arrays;  // logical field -> element count
  std::optional<DebugOffsetsLayout> debug_offsets;           // 3.13+
  // Set by apply_debug_offsets: the fields ("tstate.next") and sizes
  // ("sizeof(PyThreadState)") whose value the target's own _Py_DebugOffsets
  // changed, i.e. where this build differs from the one the row came from.
  std::vector<std::string> moved_by_target;

  std::optional<std::uint32_t> field(std::string_view name) const;
  // The field, or pyebpf::Error naming the version and the missing field.
  std::uint32_t require(std::string_view name) const;
  std::optional<std::uint64_t> size(std::string_view type) const;
  std::optional<BitField> bit(std::string_view name) const;
  std::optional<std::int64_t> constant(std::string_view name) const;
  std::optional<std::uint32_t> array_length(std::string_view name) const;
  // C member path the field was derived from ("" if absent).
  std::string member(std::string_view name) const;
};

class OffsetsTable {
 public:
  // Parses the JSON table; throws pyebpf::Error on malformed data.
  static OffsetsTable parse(std::string_view json);
  // The table embedded in this binary at build time.
  static const OffsetsTable& embedded();

  // The row for a target of `version` whose interpreter file has `build_id`:
  // the row derived from that very build if the table has it (exact: every
  // value holds for the target), else the row of the nearest patch release of
  // the same minor (the newest one not newer than the target, else the oldest
  // newer one), whose values the caller must validate against the target
  // where _Py_DebugOffsets does not give them. nullptr if the minor is not in
  // the table.
  const OffsetsRow* select(const PyVersion& version, std::string_view build_id) const;
  const std::vector<OffsetsRow>& rows() const { return rows_; }  // in version order
  std::vector<std::string> minors() const;                       // "3.8", ..., in version order, each once
  std::string minors_text() const;                               // "3.8, 3.9, ..."

 private:
  std::vector<OffsetsRow> rows_;
};

}  // namespace pyebpf::python
