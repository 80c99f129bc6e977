// SPDX-License-Identifier: Apache-2.0
#include "python/elf_file.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>

#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"

namespace pyebpf::python {
namespace {

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfCloser>;

void read_symbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, bool dynamic,
                  std::unordered_map<std::string, ElfSymbol>& out, std::vector<ElfSymbol>& functions) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (!name || !*name) continue;
    ElfSymbol s{name, sym.st_value, sym.st_size, static_cast<unsigned char>(GELF_ST_TYPE(sym.st_info)), dynamic};
    if ((s.type == STT_FUNC || s.type == STT_GNU_IFUNC) && s.size > 0) functions.push_back(s);
    out.try_emplace(s.name, std::move(s));  // first wins: .dynsym is read first
  }
}

std::string read_build_id(Elf* elf, Elf_Scn* scn) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data) return {};
  std::size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr nhdr;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4) continue;
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* desc = static_cast<const unsigned char*>(data->d_buf) + desc_off;
    std::string id;
    for (std::size_t i = 0; i < nhdr.n_descsz; ++i) {
      id += kHex[desc[i] >> 4];
      id += kHex[desc[i] & 15];
    }
    return id;
  }
  (void)elf;
  return {};
}

}  // namespace

ElfFile ElfFile::open(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) throw Error("libelf initialisation failed");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno_text("cannot open " + path, errno));
  ElfHandle elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    throw Error(path + " is not an ELF file: " + elf_errmsg(-1));

  ElfFile file;
  file.path_ = path;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf.get(), &ehdr)) throw Error(path + ": bad ELF header: " + elf_errmsg(-1));
  file.shared_object_ = ehdr.e_type == ET_DYN;

  std::size_t phnum = 0;
  elf_getphdrnum(elf.get(), &phnum);
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf.get(), static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD) continue;
    file.segments_.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz, phdr.p_memsz, (phdr.p_flags & PF_X) != 0});
  }

  // Two passes so .dynsym names win over same-named .symtab entries.
  for (int pass = 0; pass < 2; ++pass) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      if (pass == 0 && shdr.sh_type == SHT_DYNSYM)
        read_symbols(elf.get(), scn, shdr, true, file.symbols_, file.functions_);
      if (pass == 1 && shdr.sh_type == SHT_SYMTAB) {
        file.has_symtab_ = true;
        read_symbols(elf.get(), scn, shdr, false, file.symbols_, file.functions_);
      }
      if (pass == 0 && shdr.sh_type == SHT_NOTE && file.build_id_.empty())
        file.build_id_ = read_build_id(elf.get(), scn);
    }
  }
  // One name per address: aliases (poll, __poll, __libc_poll) share one. The
  // stable sort keeps .dynsym first; among equals prefer the shortest name.
  std::stable_sort(file.functions_.begin(), file.functions_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    if (a.value != b.value) return a.value < b.value;
    if (a.dynamic != b.dynamic) return a.dynamic;
    return a.name.size() < b.name.size();
  });
  file.functions_.erase(std::unique(file.functions_.begin(), file.functions_.end(),
                                    [](const ElfSymbol& a, const ElfSymbol& b) { return a.value == b.value; }),
                        file.functions_.end());
  return file;
}

std::optional<ElfSymbol> ElfFile::symbol(std::string_view name) const {
  auto it = symbols_.find(std::string(name));
  if (it == symbols_.end()) return std::nullopt;
  return it->second;
}

std::vector<ElfSymbol> ElfFile::symbol_and_clones(std::string_view name) const {
  std::vector<ElfSymbol> out;
  for (const auto& [sym_name, sym] : symbols_) {
    if (sym_name.size() < name.size() || sym_name.compare(0, name.size(), name) != 0) continue;
    if (sym_name.size() == name.size() || sym_name[name.size()] == '.') out.push_back(sym);
  }
  return out;
}

std::optional<std::uint64_t> ElfFile::vaddr_of_offset(std::uint64_t offset) const {
  for (const auto& seg : segments_) {
    if (offset >= seg.offset && offset < seg.offset + seg.filesz) return offset - seg.offset + seg.vaddr;
  }
  return std::nullopt;
}

const ElfSymbol* ElfFile::function_at(std::uint64_t vaddr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), vaddr,
                             [](std::uint64_t addr, const ElfSymbol& sym) { return addr < sym.value; });
  // Symbols may nest (a clone inside its parent's range): look back a little.
  for (int i = 0; i < 4 && it != functions_.begin(); ++i) {
    --it;
    if (vaddr < it->value + it->size) return &*it;
  }
  return nullptr;
}

std::optional<std::uint64_t> ElfFile::file_offset(std::uint64_t vaddr) const {
  for (const auto& seg : segments_) {
    if (vaddr >= seg.vaddr && vaddr < seg.vaddr + seg.filesz) return vaddr - seg.vaddr + seg.offset;
  }
  return std::nullopt;
}

}  // namespace pyebpf::python
