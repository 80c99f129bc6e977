// SPDX-License-Identifier: Apache-2.0
#include "binary/elf_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "procfs/maps.hpp"
#include "pyebpf/error.hpp"
#include "python/discovery.hpp"

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

TEST(ElfFileTest, StrippedNonPieDebianPythonExportsWhatPyebpfNeeds) {
  const std::string path = "/usr/bin/python3.11";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not installed";
  ElfFile elf = ElfFile::open(path);
  EXPECT_FALSE(elf.is_shared_object()) << "Debian's python3.11 is a non-PIE executable";
  EXPECT_FALSE(elf.has_symtab()) << "and stripped";
  for (const char* name : {"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyEval_RestoreThread"}) {
    auto sym = elf.symbol(name);
    ASSERT_TRUE(sym) << name;
    EXPECT_TRUE(sym->dynamic) << name;
  }
  EXPECT_EQ(elf.symbol("_PyRuntime")->size, 0x28b20u) << "sizeof(_PyRuntimeState) of 3.11";
  EXPECT_FALSE(elf.symbol("take_gil")) << "static functions are stripped";
}

TEST(ElfFileTest, SymtabAndCompilerClones) {
  const std::string path = "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not installed";
  ElfFile elf = ElfFile::open(path);
  EXPECT_TRUE(elf.has_symtab());
  auto clones = elf.symbol_and_clones("take_gil");
  std::vector<std::string> names;
  for (const auto& s : clones) names.push_back(s.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "take_gil"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "take_gil.constprop.0"), names.end());
  for (const auto& n : names) EXPECT_TRUE(n == "take_gil" || n.rfind("take_gil.", 0) == 0) << n;
}

TEST(ElfFileTest, NotAnElfFileIsAClearError) {
  EXPECT_THROW(ElfFile::open("/proc/self/status"), Error);
  EXPECT_THROW(ElfFile::open("/nonexistent/file"), Error);
}

}  // namespace
}  // namespace pyebpf::python
