// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct Elf;  // libelf's handle

namespace pyebpf::binary {

struct ElfSymbol {
  std::string name;
  std::uint64_t value = 0;  // st_value: a virtual address in the file's own address space
  std::uint64_t size = 0;
  unsigned char type = 0;  // STT_*
  bool dynamic = false;    // from .dynsym (exported), else .symtab
};

// A SystemTap SDT probe (USDT) from the .note.stapsdt notes, e.g. CPython's
// python:gc__start when built --with-dtrace (Debian and Ubuntu builds are).
struct UsdtProbe {
  std::string provider;
  std::string name;
  std::uint64_t pc = 0;         // virtual address of the probe's nop
  std::uint64_t semaphore = 0;  // virtual address of its semaphore, 0 if none
  std::string args;             // argument spec, e.g. "-4@112(%rsp)"
};

struct LoadSegment {
  std::uint64_t vaddr = 0;
  std::uint64_t offset = 0;
  std::uint64_t filesz = 0;
  std::uint64_t memsz = 0;
  bool executable = false;
};

// The symbols and load segments of one ELF file (libelf). Reads .dynsym and,
// when present, .symtab: stripped distro builds keep only exported symbols,
// pyenv builds keep the static ones too (take_gil, gc_collect_main).
class ElfFile {
 public:
  // Throws pyebpf::Error naming the file if it cannot be opened or parsed.
  static ElfFile open(const std::string& path);
  // The same from an image already in memory (fuzzing, files read some other
  // way); `name` stands for the path in errors.
  static ElfFile from_memory(std::vector<char> image, const std::string& name);

  const std::string& path() const { return path_; }
  bool is_shared_object() const { return shared_object_; }  // ET_DYN (PIE or .so), else ET_EXEC
  bool has_symtab() const { return has_symtab_; }
  const std::string& build_id() const { return build_id_; }
  const std::vector<LoadSegment>& load_segments() const { return segments_; }
  // What makes this file one no loader would map, or "": headers or PT_LOAD
  // segments past the end of the file, overlapping PT_LOADs, string tables
  // without a final NUL. libelf reads such files; whoever treats a mapped
  // file as code (discovery) refuses them naming this.
  const std::string& defects() const { return defects_; }

  // Defined symbol with exactly this name (.dynsym preferred).
  std::optional<ElfSymbol> symbol(std::string_view name) const;
  // Defined symbols named `name` or compiler clones of it: "name.constprop.0",
  // "name.isra.0", "name.cold", "name.part.0", "name.lto_priv.0"...
  std::vector<ElfSymbol> symbol_and_clones(std::string_view name) const;
  // Symbols of `name` and its clones where a uprobe/uretprobe pair may attach:
  // functions only, without the outlined ".cold" parts, which are jumped
  // into, not called (a uretprobe there would rewrite a random stack slot).
  std::vector<ElfSymbol> function_entries(std::string_view name) const;
  const std::vector<UsdtProbe>& usdt_probes() const { return usdt_probes_; }
  // The USDT probe provider:name, if the file has it (the first, when repeated).
  std::optional<UsdtProbe> usdt_probe(std::string_view provider, std::string_view name) const;
  // Whether the file calls `name` from another object (an undefined .dynsym entry).
  bool imports(std::string_view name) const;
  // File offset holding virtual address `vaddr` (for uprobes), if it is in a PT_LOAD segment.
  std::optional<std::uint64_t> file_offset(std::uint64_t vaddr) const;
  // `len` bytes of the file at virtual address `vaddr` (code or initialised
  // data), if a PT_LOAD segment holds all of them.
  std::optional<std::vector<std::uint8_t>> read(std::uint64_t vaddr, std::size_t len) const;
  // Virtual address loaded from file offset `offset`, if a PT_LOAD segment maps it.
  std::optional<std::uint64_t> vaddr_of_offset(std::uint64_t offset) const;
  // The function symbol whose [value, value + size) holds `vaddr` (native
  // symbolisation). Symbols without a size are ignored: in a stripped binary the
  // nearest exported symbol below an address is usually not its function.
  const ElfSymbol* function_at(std::uint64_t vaddr) const;
  std::size_t symbol_count() const { return symbols_.size(); }
  // NUL-terminated strings in section `section` (e.g. ".rodata") that start
  // with `prefix`, where the match does not continue a number (it may be the
  // merged tail of a longer string).
  std::vector<std::string> strings_starting_with(const std::string& section, std::string_view prefix) const;

 private:
  static ElfFile parse(Elf* elf, const std::string& path);

  std::string path_;
  // The bytes of a from_memory() file, for strings_starting_with() and read(); null for files on disk.
  std::shared_ptr<const std::vector<char>> image_;
  bool shared_object_ = false;
  bool has_symtab_ = false;
  std::string build_id_;
  std::vector<LoadSegment> segments_;
  std::string defects_;
  std::vector<UsdtProbe> usdt_probes_;
  std::unordered_map<std::string, ElfSymbol> symbols_;
  std::unordered_set<std::string> imports_;
  std::vector<ElfSymbol> functions_;  // sized STT_FUNC/STT_GNU_IFUNC, sorted by value, one per address
};

}  // namespace pyebpf::binary
