// SPDX-License-Identifier: Apache-2.0
#include "python/bpf_layout.hpp"

#include <algorithm>

#include "pyebpf/error.hpp"

namespace pyebpf::python {
namespace {

std::uint16_t u16(const OffsetsRow& row, std::string_view name) {
  std::uint32_t v = row.require(name);
  if (v >= PYEBPF_NO_OFFSET) throw Error("offset of " + std::string(name) + " too large for the BPF walker");
  return static_cast<std::uint16_t>(v);
}

std::uint16_t optional_u16(const OffsetsRow& row, std::string_view name) {
  return row.field(name) ? u16(row, name) : PYEBPF_NO_OFFSET;
}

// 3.14+ count the code objects each interpreter frees; BPF then remembers
// code objects across samples while the count stands still
// (pyebpf_python_code). It reads the thread's interpreter and frame pointer
// in one go, so both must lie in one window of the thread state.
void set_code_generation(pyebpf_py_layout& l, const OffsetsRow& row) {
  l.tstate_interp = optional_u16(row, "tstate.interp");
  l.interp_code_generation = optional_u16(row, "interp.code_object_generation");
  if (l.tstate_interp == PYEBPF_NO_OFFSET || l.tstate_interp >= l.tstate_frame ||
      l.tstate_frame + 8u - l.tstate_interp > PYEBPF_TSTATE_WINDOW)
    l.interp_code_generation = PYEBPF_NO_OFFSET;
}

// What frame.instr holds: a pointer into co_code_adaptive, or f_lasti (in code units or bytes).
void set_instr_kind(pyebpf_py_layout& l, const OffsetsRow& row, const PyVersion& version) {
  const bool lasti = row.member("frame.instr").ends_with(".f_lasti");
  if (!lasti) {
    l.instr_kind = PYEBPF_INSTR_POINTER;
    l.code_adaptive = u16(row, "code.code_adaptive");
  } else if (version.major == 3 && version.minor >= 10) {
    // 3.10 counts f_lasti in code units (bpo-44187 / cpython commit fcb55c0).
    l.instr_kind = PYEBPF_INSTR_LASTI_UNITS;
  } else {
    l.instr_kind = PYEBPF_INSTR_LASTI_BYTES;
  }
}

// Owners from the first non-Python one up are not Python frames: 3.12 and
// 3.13 have FRAME_OWNED_BY_CSTACK = 3, 3.14 inserted
// FRAME_OWNED_BY_INTERPRETER = 3 and moved CSTACK to 4 (cpython PR #129078),
// 3.15 dropped CSTACK.
std::uint8_t first_native_owner(const OffsetsRow& row) {
  std::int64_t first_native = 0xff;
  for (const char* owner : {"frame.owner_cstack", "frame.owner_interpreter"})
    first_native = std::min(first_native, row.constant(owner).value_or(0xff));
  return static_cast<std::uint8_t>(first_native);
}

// The bytes of a frame BPF reads: through the last field it uses.
void set_frame_window(pyebpf_py_layout& l, const PyVersion& version) {
  unsigned window = std::max({l.frame_code + 8u, l.frame_back + 8u, l.frame_instr + 8u,
                              l.frame_owner == PYEBPF_NO_OFFSET ? 0u : l.frame_owner + 1u});
  if (window > PYEBPF_FRAME_WINDOW - 8)
    throw Error("frame fields of CPython " + version.minor_str() + " lie beyond the BPF frame window");
  l.frame_window = static_cast<std::uint16_t>(window);
}

// Immutable integer header of a code object: from co_argcount up to and
// including co_firstlineno. Not from co_flags: in 3.11 two mutable shorts
// follow it (co_warmup, counting calls down to quickening, and
// _co_linearray_entry_size, set lazily), so a function called between the
// BPF read and symbolisation would get a different tag and print <unknown>.
void set_code_tag(pyebpf_py_layout& l, const OffsetsRow& row, const PyVersion& version) {
  unsigned tag_start = row.require("code.argcount");
  unsigned tag_end = row.require("code.firstlineno") + 4;
  if (tag_end <= tag_start || tag_end - tag_start > PYEBPF_CODE_TAG_LEN)
    throw Error("code header of CPython " + version.minor_str() + " does not fit the code tag");
  l.code_tag = static_cast<std::uint16_t>(tag_start);
  l.code_tag_len = static_cast<std::uint8_t>(tag_end - tag_start);
  // BPF reads ob_type and the tag in one go (pyebpf_read_code).
  if (l.object_type + 8u > tag_start || tag_end - l.object_type >= PYEBPF_CODE_WINDOW)
    throw Error("code header of CPython " + version.minor_str() + " does not fit the BPF code window");
}

}  // namespace

pyebpf_py_layout make_bpf_layout(const OffsetsRow& row, const PyVersion& version) {
  pyebpf_py_layout l{};
  // The main interpreter's thread list is the slow-path fallback; the TSD
  // slot path does not need it.
  l.runtime_interp_head = row.field("runtime.interpreters_main") ? u16(row, "runtime.interpreters_main")
                                                                 : u16(row, "runtime.interpreters_head");
  l.interp_threads_head = u16(row, "interp.threads_head");
  l.tstate_next = u16(row, "tstate.next");
  l.tstate_thread_id = u16(row, "tstate.thread_id");
  l.tstate_frame = u16(row, "tstate.frame");
  // 3.11/3.12 reach the frame through tstate->cframe->current_frame; 3.13
  // (current_frame) and <= 3.10 (frame) point at it directly.
  l.cframe_current_frame =
      row.member("tstate.frame").ends_with(".cframe") ? u16(row, "cframe.current_frame") : PYEBPF_NO_OFFSET;
  l.frame_code = u16(row, "frame.code");
  l.frame_back = u16(row, "frame.back");
  l.frame_instr = u16(row, "frame.instr");
  l.frame_owner = optional_u16(row, "frame.owner");
  l.object_type = u16(row, "object.type");
  set_code_generation(l, row);
  set_instr_kind(l, row, version);
  l.owner_cstack = first_native_owner(row);
  set_frame_window(l, version);
  // 3.11 moved the frames of running functions out of heap PyFrameObjects
  // into _PyInterpreterFrames on a per-thread stack (_PyThreadState_PushFrame):
  // each call's frame is pushed just above its caller's.
  l.frames_stacked = !row.member("frame.back").starts_with("PyFrameObject.");
  set_code_tag(l, row, version);
  return l;
}

}  // namespace pyebpf::python
