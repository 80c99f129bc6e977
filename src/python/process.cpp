// SPDX-License-Identifier: Apache-2.0
#include "python/process.hpp"

#include <cstdio>

#include "pyebpf/error.hpp"
#include "python/bpf_layout.hpp"
#include "python/debug_offsets.hpp"
#include "python/line_table.hpp"
#include "util/files.hpp"

namespace pyebpf::python {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%lx", static_cast<unsigned long>(v));
  return buf;
}

const OffsetsRow& row_for(pid_t pid, const Interpreter& interp, const OffsetsTable& table) {
  const OffsetsRow* row = table.find(interp.version.major, interp.version.minor);
  if (!row)
    throw Error("pid " + std::to_string(pid) + " runs CPython " + interp.version.str() + " (" + interp.file_name() +
                    "), which pyebpf does not support",
                "supported versions: " + table.minors_text());
  return *row;
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
      config_{make_bpf_layout(offsets_, interp_.version), PYEBPF_NO_TSS_SLOT, 0, interp_.runtime_addr, types.code},
      symbolizer_(objects_, config_.layout, line_table_format(interp_.version.major, interp_.version.minor)),
      thread_names_(objects_, interp_.runtime_addr + config_.layout.runtime_interp_head, container_pid_of(pid)) {}

std::unique_ptr<PythonProcess> PythonProcess::attach(pid_t pid, const OffsetsTable& table) {
  Interpreter interp = discover_interpreter(pid);
  OffsetsRow row = row_for(pid, interp, table);
  std::string source = "offsets table row " + row.minor + " (derived from " + row.derived_from + ")";
  if (auto applied = apply_debug_offsets(row, ProcessMemory(pid), interp.runtime_addr, interp.version))
    source = *applied;
  TypeAddresses types = type_addresses(pid, interp);
  std::unique_ptr<PythonProcess> proc(
      new PythonProcess(pid, std::move(interp), std::move(row), std::move(source), types));
  proc->validate_layout();
  if (auto slot = find_thread_state_slot(proc->memory_, proc->thread_states())) proc->config_.tss_slot = *slot;
  return proc;
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
  const std::string who =
      "pid " + std::to_string(pid()) + " (CPython " + interp_.version.str() + ", " + interp_.file_name() + ")";
  const std::string hint = "its layout differs from offsets row " + offsets_.minor + " (derived from " +
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
  for (const auto& t : thread_states(64)) {
    auto back = memory_.read_u64(t.tstate + offsets_.require("tstate.interp"));
    if (back != *interp)
      throw Error(who + ": thread state " + hex(t.tstate) + " does not point back to its interpreter", hint);
  }
}

std::string PythonProcess::describe() const {
  std::string lookup = config_.tss_slot == PYEBPF_NO_TSS_SLOT
                           ? "thread list walk"
                           : "TSD slot at thread pointer + " + hex(static_cast<std::uint64_t>(config_.tss_slot));
  return "CPython " + interp_.version.str() + " (" + interp_.version_source + ") in " + interp_.mapped_path +
         ", _PyRuntime at " + hex(interp_.runtime_addr) + ", thread-state lookup: " + lookup +
         ", offsets: " + offsets_source_;
}

}  // namespace pyebpf::python
