// SPDX-License-Identifier: Apache-2.0
// gil hook symbols in the real interpreter binaries of this machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "installed_pythons.hpp"
#include "trackers/gil/gil.hpp"

namespace pyebpf {
namespace {

// pyenv 3.8 has both take_gil and a take_gil.constprop.0 clone; both are
// called, so both are probed.
TEST(GilHooks, TakeGilClonesAreEntryPointsButSplitPartsAreNot) {
  const std::string lib = host::pyenv_lib("3.8.18");
  REQUIRE_FILE(lib);
  auto functions = trackers::take_gil_functions(binary::ElfFile::open(lib));
  std::vector<std::string> names;
  for (const auto& f : functions) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"take_gil", "take_gil.constprop.0"}));
}

// The cond_wait hook relies on take_gil waiting in the C library's
// pthread_cond_timedwait through the PLT: check every interpreter installed.
TEST(GilHooks, InstalledInterpretersCallPthreadCondTimedwaitFromTheCLibrary) {
  std::vector<std::string> files;
  for (const char* v : {"3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"})
    files.push_back(host::pyenv_lib(v));
  files.push_back(host::kDebianPython);
  std::size_t checked = 0;
  for (const auto& f : files) {
    if (!std::filesystem::exists(f)) continue;
    auto elf = binary::ElfFile::open(f);
    EXPECT_TRUE(elf.imports("pthread_cond_timedwait")) << f;
    EXPECT_FALSE(elf.imports("take_gil")) << f;
    ++checked;
  }
  if (!checked) GTEST_SKIP() << "no CPython 3.8-3.13 installed";
}

}  // namespace
}  // namespace pyebpf
