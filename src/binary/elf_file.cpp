// SPDX-License-Identifier: Apache-2.0
#include "binary/elf_file.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "pyebpf/error.hpp"
#include "pyebpf/fd.hpp"

namespace pyebpf::binary {
namespace {

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfCloser>;

// A versioned library can define one name several times: the default version
// (name@@VER, what programs linked today bind to) and hidden compatibility
// versions (name@VER, bit 15 set in .gnu.version), e.g. glibc's
// pthread_cond_timedwait@GLIBC_2.2.5 next to pthread_cond_timedwait@@GLIBC_2.3.2.
// `versym` is .gnu.version for .dynsym (null for .symtab or unversioned files).
bool hidden_version(Elf_Data* versym, std::size_t index) {
  GElf_Versym ver;
  return versym && gelf_getversym(versym, static_cast<int>(index), &ver) && (ver & 0x8000);
}

void read_symbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, bool dynamic, Elf_Data* versym,
                  std::unordered_map<std::string, ElfSymbol>& out, std::unordered_set<std::string>* imports,
                  std::vector<ElfSymbol>& functions) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  // Default versions first, so they win over hidden ones of the same name.
  for (bool hidden : {false, true}) {
    for (std::size_t i = 0; i < count; ++i) {
      if (hidden_version(versym, i) != hidden) continue;
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      if (sym.st_shndx == SHN_UNDEF && imports) imports->insert(name);
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      ElfSymbol s{name, sym.st_value, sym.st_size, static_cast<unsigned char>(GELF_ST_TYPE(sym.st_info)), dynamic};
      if ((s.type == STT_FUNC || s.type == STT_GNU_IFUNC) && s.size > 0) functions.push_back(s);
      out.try_emplace(s.name, std::move(s));  // first wins: .dynsym is read first
    }
  }
}

Elf_Data* find_versym(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_GNU_versym) return elf_getdata(scn, nullptr);
  }
  return nullptr;
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

// SystemTap SDT notes: owner "stapsdt", type 3, descriptor = pc, base,
// semaphore (64-bit addresses), then provider, name and argument strings.
constexpr unsigned kNtStapsdt = 3;

void read_usdt_probes(Elf_Scn* scn, std::vector<UsdtProbe>& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data) return;
  std::size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr nhdr;
  const char* buf = static_cast<const char*>(data->d_buf);
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    if (nhdr.n_type != kNtStapsdt || nhdr.n_namesz != 8 || std::memcmp(buf + name_off, "stapsdt", 8) != 0) continue;
    if (nhdr.n_descsz < 3 * 8 + 3) continue;
    const char* desc = buf + desc_off;
    const char* end = desc + nhdr.n_descsz;
    UsdtProbe probe;
    std::memcpy(&probe.pc, desc, 8);
    std::memcpy(&probe.semaphore, desc + 16, 8);
    const char* s = desc + 24;
    std::string* fields[] = {&probe.provider, &probe.name, &probe.args};
    bool complete = true;
    for (std::string* field : fields) {
      const char* nul = static_cast<const char*>(std::memchr(s, '\0', static_cast<std::size_t>(end - s)));
      if (!nul) {
        complete = false;
        break;
      }
      field->assign(s, nul);
      s = nul + 1;
    }
    if (complete) out.push_back(std::move(probe));
  }
}

// ElfFile::defects(), from the raw file: what libelf tolerates but a loader
// would not, each named once.
std::string find_defects(Elf* elf, const GElf_Ehdr& ehdr, std::vector<LoadSegment> segments) {
  std::size_t size = 0;
  const char* raw = elf_rawfile(elf, &size);
  std::vector<std::string> found;
  auto past_end = [size](std::uint64_t offset, std::uint64_t bytes) { return offset > size || bytes > size - offset; };
  auto table_past_end = [&](std::uint64_t offset, std::uint64_t count, std::uint64_t entry_size) {
    return past_end(offset, 0) || (entry_size && count > (size - offset) / entry_size);  // no product to overflow
  };
  // libelf counts no sections where their table is out of reach: the header
  // says how many there are (at least one: the extended count's, past 65535).
  std::size_t shnum = 0;
  elf_getshdrnum(elf, &shnum);
  const std::uint64_t sections = std::max<std::uint64_t>(shnum, ehdr.e_shnum ? ehdr.e_shnum : ehdr.e_shoff != 0);
  if (sections && table_past_end(ehdr.e_shoff, sections, ehdr.e_shentsize))
    found.push_back("section headers past the end of the file");
  if (table_past_end(ehdr.e_phoff, ehdr.e_phnum, ehdr.e_phentsize))
    found.push_back("program headers past the end of the file");
  if (std::any_of(segments.begin(), segments.end(), [&](const LoadSegment& s) { return past_end(s.offset, s.filesz); }))
    found.push_back("PT_LOAD segments past the end of the file");
  std::sort(segments.begin(), segments.end(),
            [](const LoadSegment& a, const LoadSegment& b) { return a.vaddr < b.vaddr; });
  for (std::size_t i = 1; i < segments.size(); ++i) {
    if (segments[i].vaddr - segments[i - 1].vaddr < segments[i - 1].memsz) {
      found.push_back("overlapping PT_LOAD segments");
      break;
    }
  }
  Elf_Scn* scn = nullptr;
  while (raw && (scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_STRTAB || !shdr.sh_size ||
        past_end(shdr.sh_offset, shdr.sh_size))
      continue;
    if (raw[shdr.sh_offset + shdr.sh_size - 1] != '\0') {
      found.push_back("string tables without a final NUL");
      break;
    }
  }
  std::string out;
  for (const auto& f : found) out += (out.empty() ? "" : ", ") + f;
  return out;
}

}  // namespace

ElfFile ElfFile::open(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) throw Error("libelf initialisation failed");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno_text("cannot open " + path, errno));
  ElfHandle elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  return parse(elf.get(), path);
}

ElfFile ElfFile::from_memory(std::vector<char> image, const std::string& name) {
  if (elf_version(EV_CURRENT) == EV_NONE) throw Error("libelf initialisation failed");
  // elf_memory() may convert data in place: the kept image stays pristine for later reads.
  auto kept = std::make_shared<const std::vector<char>>(image);
  ElfHandle elf(elf_memory(image.data(), image.size()));
  ElfFile file = parse(elf.get(), name);
  file.image_ = std::move(kept);
  return file;
}

ElfFile ElfFile::parse(Elf* elf, const std::string& path) {
  if (!elf || elf_kind(elf) != ELF_K_ELF) throw Error(path + " is not an ELF file: " + elf_errmsg(-1));

  ElfFile file;
  file.path_ = path;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) throw Error(path + ": bad ELF header: " + elf_errmsg(-1));
  file.shared_object_ = ehdr.e_type == ET_DYN;

  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) phnum = 0;
  // A hostile count (e_phnum = PN_XNUM takes it from section 0's sh_info:
  // up to 2^32 - 1) kept a fuzzed 655-byte image in this loop for minutes:
  // no more headers than the image can hold.
  std::size_t image_size = 0;
  elf_rawfile(elf, &image_size);
  phnum = std::min(phnum, image_size / sizeof(Elf32_Phdr));
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD) continue;
    file.segments_.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz, phdr.p_memsz, (phdr.p_flags & PF_X) != 0});
  }
  file.defects_ = find_defects(elf, ehdr, file.segments_);

  std::size_t shstrndx = 0;
  bool shstrndx_ok = elf_getshdrstrndx(elf, &shstrndx) == 0;
  // Two passes so .dynsym names win over same-named .symtab entries.
  Elf_Data* versym = find_versym(elf);
  for (int pass = 0; pass < 2; ++pass) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      if (pass == 0 && shdr.sh_type == SHT_DYNSYM)
        read_symbols(elf, scn, shdr, true, versym, file.symbols_, &file.imports_, file.functions_);
      if (pass == 1 && shdr.sh_type == SHT_SYMTAB) {
        file.has_symtab_ = true;
        read_symbols(elf, scn, shdr, false, nullptr, file.symbols_, nullptr, file.functions_);
      }
      if (pass == 0 && shdr.sh_type == SHT_NOTE && file.build_id_.empty()) file.build_id_ = read_build_id(elf, scn);
      if (pass == 0 && shdr.sh_type == SHT_NOTE && shstrndx_ok) {
        const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (name && std::strcmp(name, ".note.stapsdt") == 0) read_usdt_probes(scn, file.usdt_probes_);
      }
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

bool ElfFile::imports(std::string_view name) const {
  return imports_.contains(std::string(name));
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

std::vector<ElfSymbol> ElfFile::function_entries(std::string_view name) const {
  std::vector<ElfSymbol> out;
  for (auto& sym : symbol_and_clones(name)) {
    if (sym.type != STT_FUNC || sym.name.find(".cold") != std::string::npos) continue;
    out.push_back(std::move(sym));
  }
  std::sort(out.begin(), out.end(), [](const ElfSymbol& a, const ElfSymbol& b) { return a.value < b.value; });
  return out;
}

std::optional<UsdtProbe> ElfFile::usdt_probe(std::string_view provider, std::string_view name) const {
  for (const auto& probe : usdt_probes_) {
    if (probe.provider == provider && probe.name == name) return probe;
  }
  return std::nullopt;
}

std::vector<std::string> ElfFile::strings_starting_with(const std::string& section, std::string_view prefix) const {
  std::vector<std::string> out;
  Fd fd;
  std::vector<char> image;
  ElfHandle elf;
  if (image_) {
    image = *image_;
    elf.reset(elf_memory(image.data(), image.size()));
  } else {
    fd.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return out;
    elf.reset(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  }
  std::size_t shstrndx = 0;
  if (!elf || elf_getshdrstrndx(elf.get(), &shstrndx) != 0) return out;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS) continue;
    const char* name = elf_strptr(elf.get(), shstrndx, shdr.sh_name);
    if (!name || section != name) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) continue;
    std::string_view bytes(static_cast<const char*>(data->d_buf), data->d_size);
    for (std::size_t pos = bytes.find(prefix); pos != std::string_view::npos; pos = bytes.find(prefix, pos + 1)) {
      // Linkers merge string tails ("Python-3.8.18" also serves "3.8.18"), so a
      // match may start mid-string; it must not continue a number, though.
      if (pos > 0 && (std::isdigit(static_cast<unsigned char>(bytes[pos - 1])) || bytes[pos - 1] == '.')) continue;
      std::size_t end = bytes.find('\0', pos);
      if (end == std::string_view::npos) break;
      out.emplace_back(bytes.substr(pos, end - pos));
    }
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

std::optional<std::vector<std::uint8_t>> ElfFile::read(std::uint64_t vaddr, std::size_t len) const {
  if (len == 0) return std::vector<std::uint8_t>{};
  auto offset = file_offset(vaddr);
  if (!offset || !file_offset(vaddr + len - 1) || *file_offset(vaddr + len - 1) != *offset + len - 1)
    return std::nullopt;
  std::vector<std::uint8_t> out(len);
  if (image_) {
    if (*offset > image_->size() || image_->size() - *offset < len) return std::nullopt;
    std::memcpy(out.data(), image_->data() + *offset, len);
    return out;
  }
  Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd || ::pread(fd.get(), out.data(), len, static_cast<off_t>(*offset)) != static_cast<ssize_t>(len))
    return std::nullopt;
  return out;
}

std::optional<std::uint64_t> ElfFile::file_offset(std::uint64_t vaddr) const {
  for (const auto& seg : segments_) {
    if (vaddr >= seg.vaddr && vaddr < seg.vaddr + seg.filesz) return vaddr - seg.vaddr + seg.offset;
  }
  return std::nullopt;
}

}  // namespace pyebpf::binary
