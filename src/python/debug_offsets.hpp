// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "python/memory.hpp"
#include "python/offsets.hpp"
#include "python/version.hpp"

namespace pyebpf::python {

// CPython 3.13+ describes its own layout: _PyRuntime starts with
// _Py_DebugOffsets (cookie "xdebugpy", PY_VERSION_HEX, then offsets of the
// interpreter's structs). When the target carries a valid one for its version,
// every field it describes replaces the table's value in `row`, so a patch
// release that moved a field still works. Returns a one-line description of
// what was used (for the info log), or nullopt when the row has no debug
// offsets layout or the target's are missing or invalid (the table is used).
std::optional<std::string> apply_debug_offsets(OffsetsRow& row, const ProcessMemory& memory, std::uint64_t runtime_addr,
                                               const PyVersion& version);
// The same on the first bytes of _PyRuntime already copied out of the target
// (any length: what the layout needs beyond it counts as missing).
std::optional<std::string> apply_debug_offsets(OffsetsRow& row, std::span<const std::uint8_t> runtime_head,
                                               const PyVersion& version);

}  // namespace pyebpf::python
