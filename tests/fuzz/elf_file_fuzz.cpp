// SPDX-License-Identifier: Apache-2.0
// The ELF reader on arbitrary bytes: the files pyebpf opens through
// /proc/PID/root belong to the target (a container image, a replaced binary).
// Symbols (.dynsym, .symtab, versions), segments, notes (build-id, USDT) and
// .rodata strings are all read, then every query is asked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "pyebpf/error.hpp"
#include "python/thread_slot.hpp"

using pyebpf::binary::ElfFile;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<char> image(data, data + size);
  try {
    ElfFile elf = ElfFile::from_memory(std::move(image), "fuzz.elf");
    (void)elf.build_id();
    (void)elf.symbol("_PyRuntime");
    (void)elf.imports("pthread_cond_timedwait");
    (void)elf.function_entries("take_gil");
    (void)elf.usdt_probe("python", "gc__start");
    for (const auto& probe : elf.usdt_probes()) {
      (void)elf.function_at(probe.pc);
      (void)elf.file_offset(probe.pc);
    }
    if (auto runtime = elf.symbol("_PyRuntime")) (void)elf.read(runtime->value, 64);
    // 3.15+: the thread-local gilstate offset, decoded from this function's code.
    if (auto gilstate = elf.symbol("PyGILState_GetThisThreadState")) {
      if (auto code = elf.read(gilstate->value, 16)) (void)pyebpf::python::decode_tls_load(*code);
    }
    for (const auto& seg : elf.load_segments()) {
      (void)elf.read(seg.vaddr, 16);
      (void)elf.read(seg.vaddr + seg.filesz - 8, 16);
      (void)elf.file_offset(seg.vaddr + seg.filesz / 2);
      (void)elf.vaddr_of_offset(seg.offset + seg.filesz / 2);
      (void)elf.function_at(seg.vaddr + seg.memsz / 2);
    }
    (void)elf.strings_starting_with(".rodata", "3.");
  } catch (const pyebpf::Error&) {
    // A clear refusal is the right answer to a broken file.
  }
  return 0;
}
