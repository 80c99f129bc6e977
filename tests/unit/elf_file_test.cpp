// SPDX-License-Identifier: Apache-2.0
#include "binary/elf_file.hpp"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "procfs/maps.hpp"
#include "pyebpf/error.hpp"
#include "python/interpreter.hpp"

// A function with a known address in this (PIE) test binary.
extern "C" __attribute__((noinline, used)) int pyebpf_elf_test_marker(int x) {
  return x * 3 + 1;
}

namespace pyebpf::python {
using binary::ElfFile;
using procfs::read_maps;
namespace {

std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

TEST(ElfFileTest, SymbolAddressPlusLoadBiasIsTheRuntimeAddress) {
  ElfFile elf = ElfFile::open(self_exe());
  EXPECT_TRUE(elf.is_shared_object()) << "test binary is expected to be PIE";
  auto sym = elf.symbol("pyebpf_elf_test_marker");
  ASSERT_TRUE(sym);
  EXPECT_FALSE(sym->dynamic);
  auto bias = load_bias(elf, read_maps(getpid()), self_exe());
  ASSERT_TRUE(bias);
  EXPECT_EQ(*bias + sym->value, reinterpret_cast<std::uint64_t>(&pyebpf_elf_test_marker));
  auto offset = elf.file_offset(sym->value);
  ASSERT_TRUE(offset);
  EXPECT_LT(*offset, std::filesystem::file_size(self_exe()));
  EXPECT_FALSE(elf.build_id().empty());
}

// A small real ELF image.
std::vector<char> true_image() {
  std::ifstream in("/bin/true", std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

TEST(ElfFileTest, FilesNoLoaderWouldMapNameTheirDefects) {
  EXPECT_EQ(ElfFile::open("/bin/true").defects(), "");

  std::vector<char> image = true_image();
  image.resize(80);  // the ELF header and a little after it
  EXPECT_EQ(ElfFile::from_memory(image, "truncated").defects(),
            "section headers past the end of the file, program headers past the end of the file");

  image = true_image();
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, image.data(), sizeof(ehdr));
  for (int i = 0; i < ehdr.e_phnum; ++i) {  // every PT_LOAD at vaddr 0, past the end
    Elf64_Phdr ph;
    std::memcpy(&ph, image.data() + ehdr.e_phoff + i * sizeof(ph), sizeof(ph));
    ph.p_type = PT_LOAD;
    ph.p_vaddr = ph.p_offset = 0;
    ph.p_filesz = ph.p_memsz = image.size() + 1;
    std::memcpy(image.data() + ehdr.e_phoff + i * sizeof(ph), &ph, sizeof(ph));
  }
  EXPECT_EQ(ElfFile::from_memory(image, "overlapping").defects(),
            "PT_LOAD segments past the end of the file, overlapping PT_LOAD segments");

  image = true_image();
  const auto* shdrs = reinterpret_cast<const Elf64_Shdr*>(image.data() + ehdr.e_shoff);
  for (int i = 0; i < ehdr.e_shnum; ++i) {
    if (shdrs[i].sh_type == SHT_STRTAB) image[shdrs[i].sh_offset + shdrs[i].sh_size - 1] = 'A';
  }
  EXPECT_EQ(ElfFile::from_memory(image, "unterminated").defects(), "string tables without a final NUL");
}

// e_phnum = PN_XNUM: the program header count is section 0's sh_info, here
// 2^32 - 1 in a 128-byte image (the fuzzer's find kept parse() busy for
// minutes, a header read per count).
TEST(ElfFileTest, AHostileProgramHeaderCountIsBoundedByTheImage) {
  std::vector<char> image(128, 0);
  Elf64_Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_DYN;
  ehdr.e_machine = EM_X86_64;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  ehdr.e_phoff = 16384;
  ehdr.e_phentsize = sizeof(Elf64_Phdr);
  ehdr.e_phnum = PN_XNUM;
  ehdr.e_shoff = sizeof(Elf64_Ehdr);
  ehdr.e_shentsize = sizeof(Elf64_Shdr);
  ehdr.e_shnum = 1;
  Elf64_Shdr section0{};
  section0.sh_info = 0xffffffff;
  std::memcpy(image.data(), &ehdr, sizeof(ehdr));
  std::memcpy(image.data() + sizeof(ehdr), &section0, sizeof(section0));
  const auto start = std::chrono::steady_clock::now();
  try {
    ElfFile::from_memory(image, "hostile");
  } catch (const Error&) {
    // refusing it is as good as parsing it: what matters is the time
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(ElfFileTest, NotAnElfFileIsAClearError) {
  EXPECT_THROW(ElfFile::open("/proc/self/status"), Error);
  EXPECT_THROW(ElfFile::open("/nonexistent/file"), Error);
}

}  // namespace
}  // namespace pyebpf::python
