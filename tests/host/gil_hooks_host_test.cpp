// SPDX-License-Identifier: Apache-2.0
// gil hook symbols in the real interpreter binaries of this machine.
#include <gtest/gtest.h>

#include <algorithm>
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
// pthread_cond_timedwait through the PLT: checked on each interpreter
// tools/install-deps installs (a missing one is a skip naming it).
class CondWaitImport : public ::testing::TestWithParam<std::string> {};

TEST_P(CondWaitImport, InterpreterCallsPthreadCondTimedwaitFromTheCLibrary) {
  const std::string file = GetParam() == "debian" ? std::string(host::kDebianPython) : host::pyenv_lib(GetParam());
  REQUIRE_FILE(file);
  auto elf = binary::ElfFile::open(file);
  EXPECT_TRUE(elf.imports("pthread_cond_timedwait")) << file;
  EXPECT_FALSE(elf.imports("take_gil")) << file;
}

INSTANTIATE_TEST_SUITE_P(GilHooks, CondWaitImport,
                         ::testing::Values("3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0", "debian"),
                         [](const auto& info) {
                           std::string name = info.param == "debian" ? "debian_3_11" : "pyenv_" + info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace pyebpf
