// SPDX-License-Identifier: Apache-2.0
#include "python/process.hpp"

#include <algorithm>
#include <atomic>

#include "pyebpf/error.hpp"
#include "python/bpf_layout.hpp"
#include "python/debug_offsets.hpp"
#include "python/line_table.hpp"
#include "util/files.hpp"
#include "util/text.hpp"

namespace pyebpf::python {
namespace {

// "pid 12 (CPython 3.14.10, python3.14)": the target in attach errors.
std::string who_of(pid_t pid, const Interpreter& interp) {
  return "pid " + std::to_string(pid) + " (CPython " + interp.version.str() + ", " + interp.file_name() + ")";
}

const OffsetsRow& row_for(pid_t pid, const Interpreter& interp, const OffsetsTable& table) {
  const OffsetsRow* row = table.select(interp.version, interp.elf.build_id());
  if (!row)
    throw Error("pid " + std::to_string(pid) + " runs CPython " + interp.version.str() + " (" + interp.file_name() +
                    "), which pyebpf does not support",
                "supported versions: " + table.minors_text());
  return *row;
}

// 3.15+ keep each thread's own state in the thread-local _Py_tss_gilstate,
// which PyGILState_GetThisThreadState returns; a statically linked
// interpreter reads it at a fixed offset from the thread pointer.
std::optional<std::int32_t> gilstate_tls_offset(const Interpreter& interp) {
  if (interp.version.major != 3 || interp.version.minor < 15) return std::nullopt;
  auto sym = interp.elf.symbol("PyGILState_GetThisThreadState");
  if (!sym) return std::nullopt;
  auto code = interp.elf.read(sym->value, std::min<std::uint64_t>(sym->size ? sym->size : 16, 16));
  if (!code) return std::nullopt;
  return decode_tls_load(*code);
}

TypeAddresses type_addresses(pid_t pid, const Interpreter& interp) {
  TypeAddresses t;
  auto need = [&](const char* name) {
    auto addr = interp.symbol_address(name);
    if (!addr) throw Error("pid " + std::to_string(pid) + ": " + interp.file_name() + " does not export " + name);
    return *addr;
  };
  t.code = need("PyCode_Type");
  t.unicode = need("PyUnicode_Type");
  t.bytes = need("PyBytes_Type");
  t.dict = need("PyDict_Type");
  t.long_ = need("PyLong_Type");
  t.module = need("PyModule_Type");
  return t;
}

}  // namespace

PythonProcess::PythonProcess(pid_t pid, Interpreter interp, OffsetsRow row, std::string offsets_source,
                             TypeAddresses types)
    : memory_(pid),
      interp_(std::move(interp)),
      offsets_(std::move(row)),
      offsets_source_(std::move(offsets_source)),
      objects_(memory_, offsets_, interp_.version, types),
      config_{make_bpf_layout(offsets_, interp_.version),
              PYEBPF_NO_TSS_SLOT,
              next_image(),
              interp_.runtime_addr,
              types.code,
              0},
      symbolizer_(objects_, config_.layout, line_table_format(interp_.version.major, interp_.version.minor)),
      thread_names_(objects_, interp_.runtime_addr + config_.layout.runtime_interp_head, container_pid_of(pid)) {}

std::unique_ptr<PythonProcess> PythonProcess::attach(pid_t pid, const OffsetsTable& table) {
  Interpreter interp = discover_interpreter(pid);
  OffsetsRow row = row_for(pid, interp, table);
  const std::string who = who_of(pid, interp);
  // Exact: the row was derived from this very file, so every value in it
  // holds. Otherwise it comes from another patch release or build of the
  // minor, and what the target does not describe itself is checked live.
  const bool exact = !row.build_id.empty() && row.build_id == interp.elf.build_id();
  std::string source =
      "offsets row " + row.label +
      (exact ? " (this very build)" : " (derived from " + row.derived_from + "; checked against the process)");
  auto debug = apply_debug_offsets(row, ProcessMemory(pid), interp.runtime_addr, interp.runtime_size, interp.version);
  switch (debug.status) {
    case DebugOffsetsStatus::FreeThreaded:
      throw Error("pid " + std::to_string(pid) + " runs a free-threaded CPython " + interp.version.str() + " (" +
                      interp.file_name() + "), which pyebpf does not support",
                  "profile the program under the default (GIL) build of CPython " + interp.version.minor_str());
    case DebugOffsetsStatus::Invalid:
      if (!exact) throw Error(who + ": " + debug.text, "pyebpf cannot check this build's layout; please report it");
      source += "; " + debug.text + ", so the row's values are used";
      break;
    case DebugOffsetsStatus::Applied:
      source = debug.text + (exact ? " (this very build)" : "");
      break;
    case DebugOffsetsStatus::NotInRow:
      break;
  }
  TypeAddresses types = type_addresses(pid, interp);
  auto gilstate_tls = gilstate_tls_offset(interp);
  std::unique_ptr<PythonProcess> proc(
      new PythonProcess(pid, std::move(interp), std::move(row), std::move(source), types));
  proc->validate_layout();
  if (auto slot = find_thread_state_slot(proc->memory_, proc->thread_states(), gilstate_tls)) {
    proc->config_.tss_slot = *slot;
    proc->slot_kind_ = gilstate_tls ? "thread-local _Py_tss_gilstate" : "TSD slot";
  }
  proc->config_.main_interp = proc->main_interp_counting_code_frees();
  return proc;
}

std::unique_ptr<PythonProcess> PythonProcess::fork_of(const PythonProcess& parent, pid_t child) {
  std::unique_ptr<PythonProcess> proc(
      new PythonProcess(child, parent.interp_, parent.offsets_, parent.offsets_source_, parent.objects_.types()));
  const std::uint32_t image = proc->config_.image;
  proc->config_ = parent.config_;  // the same layout, runtime address and thread-state slot
  proc->config_.image = image;     // but a process image of its own (pyebpf_py_proc.image)
  proc->slot_kind_ = parent.slot_kind_;
  return proc;
}

std::uint32_t PythonProcess::next_image() {
  static std::atomic<std::uint32_t> images{0};
  std::uint32_t image = ++images;
  return image ? image : ++images;  // 0 is "none" to BPF
}

// The main interpreter, where the target counts the code objects it frees
// (3.14+) and BPF may remember code objects across samples: validate_layout
// checked it is runtime.interpreters_main, the interpreter never freed while
// the process lives. 0 where the count is missing or unreadable.
std::uint64_t PythonProcess::main_interp_counting_code_frees() const {
  const auto& l = config_.layout;
  if (l.interp_code_generation == PYEBPF_NO_OFFSET || !offsets_.field("runtime.interpreters_main")) return 0;
  auto interp = memory_.read_u64(config_.runtime + l.runtime_interp_head);
  if (!interp || !*interp || !memory_.read_u64(*interp + l.interp_code_generation)) return 0;
  return *interp;
}

std::vector<ThreadStateRef> PythonProcess::thread_states(std::size_t max) const {
  std::vector<ThreadStateRef> out;
  const auto& l = config_.layout;
  auto interp = memory_.read_u64(config_.runtime + l.runtime_interp_head);
  if (!interp || !*interp) return out;
  auto tstate = memory_.read_u64(*interp + l.interp_threads_head);
  while (tstate && *tstate && out.size() < max) {
    auto thread_id = memory_.read_u64(*tstate + l.tstate_thread_id);
    if (!thread_id) break;
    out.push_back({*tstate, *thread_id});
    tstate = memory_.read_u64(*tstate + l.tstate_next);
  }
  return out;
}

// The table row was derived from one build of this minor version; the target
// may be another patch release or a distro build. Check what can be checked
// against the live process before BPF trusts the offsets.
void PythonProcess::validate_layout() const {
  const std::string who = who_of(pid(), interp_);
  const std::string hint = "its layout differs from offsets row " + offsets_.label + " (derived from " +
                           offsets_.derived_from + "); please report this build";
  auto runtime_size = offsets_.size("_PyRuntimeState");
  if (interp_.runtime_size && runtime_size && interp_.runtime_size != *runtime_size)
    throw Error(who + ": sizeof(_PyRuntime) is " + std::to_string(interp_.runtime_size) + ", the table says " +
                    std::to_string(*runtime_size),
                hint);

  // PyCode_Type.tp_basicsize is offsetof(co_code_adaptive) on 3.11+ and
  // sizeof(PyCodeObject) before: the code object layout the walker relies on.
  auto basicsize = memory_.read_value<std::int64_t>(objects_.types().code + offsets_.require("type.basicsize"));
  std::uint64_t expected = offsets_.field("code.code_adaptive") ? *offsets_.field("code.code_adaptive")
                                                                : offsets_.size("PyCodeObject").value_or(0);
  if (!basicsize || static_cast<std::uint64_t>(*basicsize) != expected)
    throw Error(who + ": PyCode_Type.tp_basicsize is " + (basicsize ? std::to_string(*basicsize) : "unreadable") +
                    ", the table expects " + std::to_string(expected),
                hint);

  const auto& l = config_.layout;
  auto interp = memory_.read_u64(config_.runtime + l.runtime_interp_head);
  if (!interp || !*interp)
    throw Error(who + ": no interpreter in _PyRuntime yet (is the process still starting?)", hint);
  // 3.13+ describe where the list of interpreters starts but not where the
  // main one is kept: it is the list's last, the first one ever created.
  if (offsets_.field("runtime.interpreters_main")) {
    auto it = memory_.read_u64(config_.runtime + offsets_.require("runtime.interpreters_head"));
    std::optional<std::uint64_t> last;
    for (int i = 0; i < 64 && it && *it; ++i) {
      last = it;
      it = memory_.read_u64(*it + offsets_.require("interp.next"));
    }
    if (last != *interp)
      throw Error(who + ": runtime.interpreters_main is not the last interpreter of runtime.interpreters_head", hint);
  }
  for (const auto& t : thread_states(64)) {
    auto back = memory_.read_u64(t.tstate + offsets_.require("tstate.interp"));
    if (back != *interp)
      throw Error(who + ": thread state " + hex(t.tstate) + " does not point back to its interpreter", hint);
  }
  validate_object_readers(*interp, who, hint);
}

// Thread names and module lookups read dicts, str and module objects with
// offsets _Py_DebugOffsets does not give (dict keys internals, the str state
// bits, PyModuleObject.md_dict). Values that must hold: the modules dict maps
// "sys" to the sys module, whose own dict maps "modules" to that same dict.
// A dict being resized by a concurrent import can tear one read: retried.
void PythonProcess::validate_object_readers(std::uint64_t interp, const std::string& who,
                                            const std::string& hint) const {
  auto modules = memory_.read_u64(interp + offsets_.require("interp.modules"));
  if (!modules || !*modules) return;  // still starting: nothing imported yet
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto sys = objects_.dict_get(*modules, "sys");
    auto sys_dict = sys ? memory_.read_u64(*sys + offsets_.require("module.dict")) : std::nullopt;
    if (sys_dict && objects_.dict_get(*sys_dict, "modules") == *modules) return;
  }
  throw Error(who +
                  ": sys.modules cannot be read back through sys.__dict__ (dict keys, str or module.dict "
                  "layout does not fit)",
              hint);
}

std::string PythonProcess::name() const {
  return "CPython " + interp_.version.str() + ", " + interp_.mapped_path;
}

std::string PythonProcess::describe() const {
  std::string lookup = "thread list walk";
  if (config_.tss_slot != PYEBPF_NO_TSS_SLOT) {
    std::int32_t slot = config_.tss_slot;
    lookup = slot_kind_ + " at thread pointer " + (slot < 0 ? "- " : "+ ") +
             hex(static_cast<std::uint64_t>(slot < 0 ? -static_cast<std::int64_t>(slot) : slot));
  }
  return "CPython " + interp_.version.str() + " (" + interp_.version_source + ") in " + interp_.mapped_path +
         ", _PyRuntime at " + hex(interp_.runtime_addr) + ", thread-state lookup: " + lookup +
         (config_.main_interp ? ", code objects remembered across samples (the target counts their frees)" : "") +
         ", offsets: " + offsets_source_;
}

}  // namespace pyebpf::python
