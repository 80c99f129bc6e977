// SPDX-License-Identifier: Apache-2.0
// ElfFile on the real interpreter binaries of this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "installed_pythons.hpp"

namespace pyebpf::binary {
namespace {

TEST(ElfFileTest, StrippedNonPieDebianPythonExportsWhatPyebpfNeeds) {
  const std::string path = host::kDebianPython;
  REQUIRE_FILE(path);
  ElfFile elf = ElfFile::open(path);
  EXPECT_EQ(elf.defects(), "");
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
  const std::string path = host::pyenv_lib("3.8.18");
  REQUIRE_FILE(path);
  ElfFile elf = ElfFile::open(path);
  EXPECT_TRUE(elf.has_symtab());
  auto clones = elf.symbol_and_clones("take_gil");
  std::vector<std::string> names;
  for (const auto& s : clones) names.push_back(s.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "take_gil"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "take_gil.constprop.0"), names.end());
  for (const auto& n : names) EXPECT_TRUE(n == "take_gil" || n.rfind("take_gil.", 0) == 0) << n;
}

}  // namespace
}  // namespace pyebpf::binary
