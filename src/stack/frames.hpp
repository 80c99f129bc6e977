// SPDX-License-Identifier: Apache-2.0
// Stack frames as values: what decoders produce from BPF stacks and what
// sinks consume. Text exists only where an output format asks for it (JSON
// lines, database columns, folded files): written by the functions here, and
// read back by the parsers here at the one input boundary that has only text
// (`pyebpf report FILE` on stored JSON lines or SQLite rows).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pyebpf::stack {

// A Python frame: "function (file:line)" as text.
struct PyFrame {
  std::string_view function;    // co_qualname (3.11+) or co_name
  std::string_view file;        // co_filename
  std::int32_t line = 0;        // executing line; co_firstlineno where the table has none
  std::int32_t first_line = 0;  // co_firstlineno; 0 where unknown (frames parsed back from text carry none)
};

// A native frame, user space or kernel. As text:
//   Symbol      "name [module]", or "name" for the kernel image (no module)
//   InModule    "[unknown] [libc.so.6+0x8a2b]": inside a mapped file, no symbol covers it
//   Address     "[unknown] [0x7f0012345678]": outside any file mapping (JIT, anonymous, garbage)
//   Truncated   "[truncated]": the root side of the stack was cut (depth limit)
struct NativeFrame {
  enum class Kind : std::uint8_t { Symbol, InModule, Address, Truncated };
  Kind kind = Kind::Symbol;
  std::string_view symbol;    // Symbol
  std::string_view module;    // Symbol (empty: the kernel image), InModule
  std::uint64_t address = 0;  // InModule: offset in the file; Address: the address
};

inline constexpr std::string_view kUnknown = "[unknown]";
inline constexpr std::string_view kTruncated = "[truncated]";

void append_text(std::string& out, const PyFrame& frame);
void append_text(std::string& out, const NativeFrame& frame);
std::string text_of(const PyFrame& frame);
std::string text_of(const NativeFrame& frame);

// "func (file:line)" taken apart (views into `text`); nullopt if it is not one.
std::optional<PyFrame> parse_py_frame(std::string_view text);
// Any native frame text back into its parts (views into `text`). A "+0x1a"
// offset after a symbol name (other tools print one) is dropped.
NativeFrame parse_native_frame(std::string_view text);

}  // namespace pyebpf::stack
