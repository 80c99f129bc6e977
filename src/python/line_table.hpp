// Decoders for CPython's per-code-object line tables: given the raw table bytes
// copied out of a profiled process and an instruction offset, they return the
// source line being executed.
//
// The tables come from a foreign process, so they are treated as untrusted:
// every decoder is bounds-checked, runs in time linear in the table size, never
// throws, and answers std::nullopt for anything it cannot decode.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace pyebpf::python {

enum class LineTableFormat {
  Lnotab,        // 3.8, 3.9: co_lnotab (byte pairs, signed line deltas since 3.8)
  Linetable310,  // 3.10: co_linetable (PEP 626 pairs, -128 = no line)
  Locations311,  // 3.11+: co_linetable location table (PEP 657 entries, varints)
};

// The format a CPython minor version uses (3.8 .. 3.13; later minors → Locations311).
// Minors before 3.8 map to Lnotab (3.6 and 3.7 share its encoding; older ones are
// not supported by the profiler at all).
LineTableFormat line_table_format(int major, int minor) noexcept;

// Source line executing at the instruction that starts at byte offset `instr_offset`
// (bytes from the start of the bytecode: f_lasti for 3.8/3.9, 2*f_lasti for 3.10,
// 2*(prev_instr/instr_ptr - _PyCode_CODE(co)) for 3.11+). Returns std::nullopt where the
// table says the instruction has no line (3.10+ "no line" entries), or the offset is past
// the table / negative. `first_line` is co_firstlineno.
//
// Lnotab caveat: co_lnotab does not record the bytecode length, so an offset past the
// last entry resolves to the last line, exactly as CPython's PyCode_Addr2Line does; an
// empty co_lnotab is valid and means every instruction is on `first_line`. Callers that
// know co_code's size should reject larger offsets themselves.
std::optional<int> line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table, int first_line,
                                   std::int64_t instr_offset) noexcept;

}  // namespace pyebpf::python
