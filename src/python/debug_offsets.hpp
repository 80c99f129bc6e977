// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "python/memory.hpp"
#include "python/offsets.hpp"
#include "python/version.hpp"

namespace pyebpf::python {

enum class DebugOffsetsStatus {
  Applied,       // the target's values replace the row's
  NotInRow,      // the row has no _Py_DebugOffsets layout (<= 3.12)
  Invalid,       // the target's are missing or do not fit the layout: `text` says why
  FreeThreaded,  // a free-threaded (no GIL) build: nothing pyebpf reads has the GIL build's layout
};

struct DebugOffsetsResult {
  DebugOffsetsStatus status;
  // Applied: one line for the info log (what was used, what moved). Invalid: the reason.
  std::string text;
};

// CPython 3.13+ describes its own layout: _PyRuntime starts with
// _Py_DebugOffsets (cookie "xdebugpy", PY_VERSION_HEX, the free-threaded flag,
// then offsets and sizes of the interpreter's structs). Where the row says
// each value sits, they are read from the target, checked (right cookie and
// version, sizeof(_PyRuntime) equal to the size of the target's _PyRuntime
// symbol when `runtime_size` is known, sane values) and, all or nothing,
// written over the row's values, so a patch release that moved a field works.
DebugOffsetsResult apply_debug_offsets(OffsetsRow& row, const ProcessMemory& memory, std::uint64_t runtime_addr,
                                       std::uint64_t runtime_size, const PyVersion& version);
// The same on the first bytes of _PyRuntime already copied out of the target
// (shorter than the row's _Py_DebugOffsets layout: Invalid).
DebugOffsetsResult apply_debug_offsets(OffsetsRow& row, std::span<const std::uint8_t> runtime_head,
                                       std::uint64_t runtime_size, const PyVersion& version);

}  // namespace pyebpf::python
