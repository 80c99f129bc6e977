// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "python.h"
#include "python/interpreter.hpp"
#include "python/memory.hpp"
#include "python/objects.hpp"
#include "python/offsets.hpp"
#include "python/symbolizer.hpp"
#include "python/thread_names.hpp"
#include "python/thread_slot.hpp"

namespace pyebpf::python {

// Everything pyebpf knows about one target CPython process: its interpreter
// binary and version, the offsets row that describes it (checked against the
// live process before use), the per-process BPF configuration, and the
// user-space readers that turn BPF records into names.
class PythonProcess {
 public:
  // Discovers and validates; throws pyebpf::Error with a one-line reason.
  static std::unique_ptr<PythonProcess> attach(pid_t pid, const OffsetsTable& table);
  // `child`, a fork of `parent` that has not exec'd: a copy of its address
  // space, so of its interpreter, layout and thread-state slot. Nothing is
  // read from the child (no ELF parse, no validation): the caller makes sure
  // it has not exec'd.
  static std::unique_ptr<PythonProcess> fork_of(const PythonProcess& parent, pid_t child);

  pid_t pid() const { return memory_.pid(); }
  const Interpreter& interpreter() const { return interp_; }
  const OffsetsRow& offsets() const { return offsets_; }
  const ObjectReader& objects() const { return objects_; }
  const pyebpf_py_proc& bpf_config() const { return config_; }
  Symbolizer& symbolizer() { return symbolizer_; }
  ThreadNames& thread_names() { return thread_names_; }
  // "CPython 3.14.10, /usr/bin/python3.14": the target in messages.
  std::string name() const;
  // "CPython 3.11.7 in libpython3.11.so.1.0, offsets row pyenv-3.11.7, thread lookup: TSD slot tp+0x318"
  std::string describe() const;

  // Live thread states of the main interpreter (bounded walk from user space).
  std::vector<ThreadStateRef> thread_states(std::size_t max = 4096) const;

 private:
  PythonProcess(pid_t pid, Interpreter interp, OffsetsRow row, std::string offsets_source, TypeAddresses types);
  void validate_layout() const;
  void validate_object_readers(std::uint64_t interp, const std::string& who, const std::string& hint) const;
  std::uint64_t main_interp_counting_code_frees() const;
  // pyebpf_py_proc.image: a new one per attach.
  static std::uint32_t next_image();

  ProcessMemory memory_;
  Interpreter interp_;
  OffsetsRow offsets_;  // the table row, with the target's own debug offsets applied (3.13+)
  std::string offsets_source_;
  std::string slot_kind_;  // where the thread-state slot was found, for describe()
  ObjectReader objects_;
  pyebpf_py_proc config_{};
  Symbolizer symbolizer_;
  ThreadNames thread_names_;
};

}  // namespace pyebpf::python
