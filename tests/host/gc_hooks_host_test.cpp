// SPDX-License-Identifier: Apache-2.0
// gc hook selection on the real interpreter binaries of this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "installed_pythons.hpp"
#include "trackers/gc/gc.hpp"

namespace pyebpf::trackers {
namespace {

using Kind = GcHookPlan::Kind;
using host::pyenv_lib;

std::vector<std::string> names(const std::vector<binary::ElfSymbol>& symbols) {
  std::vector<std::string> out;
  for (const auto& s : symbols) out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GcHooks, StrippedDebianBuildGetsItsUsdtProbesWithSemaphores) {
  REQUIRE_FILE(std::string(host::kDebianPython));
  auto elf = binary::ElfFile::open(host::kDebianPython);
  ASSERT_FALSE(elf.has_symtab());
  auto plan = plan_gc_hooks(elf, {3, 11, 2}, GcHookChoice::Auto);
  ASSERT_EQ(plan.kind, Kind::Usdt) << plan.missing;
  ASSERT_TRUE(plan.start && plan.done);
  EXPECT_EQ(plan.start->name, "gc__start");
  EXPECT_EQ(plan.done->name, "gc__done");
  EXPECT_NE(plan.start->semaphore, 0u);
  EXPECT_NE(plan.done->semaphore, 0u);
  EXPECT_NE(plan.start->semaphore, plan.done->semaphore);
  EXPECT_TRUE(elf.file_offset(plan.start->pc).has_value());
  EXPECT_NE(plan.start->args.find("@"), std::string::npos) << plan.start->args;  // one argument: the generation
  EXPECT_NE(plan.description.find("USDT python:gc__start"), std::string::npos);
  // Other probes are parsed too, e.g. the import and function probes.
  EXPECT_TRUE(elf.usdt_probe("python", "import__find__load__start").has_value());
  EXPECT_FALSE(elf.usdt_probe("python", "no__such__probe").has_value());

  auto forced = plan_gc_hooks(elf, {3, 11, 2}, GcHookChoice::Uprobe);
  EXPECT_EQ(forced.kind, Kind::None);
  EXPECT_NE(forced.missing.find("no symbol gc_collect_main (.symtab stripped)"), std::string::npos) << forced.missing;
  EXPECT_NE(forced.hint.find("--gc-hook auto"), std::string::npos);
}

TEST(GcHooks, Python38HasTwoClonesOfCollectWithDifferentParameters) {
  const std::string path = pyenv_lib("3.8.18");
  REQUIRE_FILE(path);
  auto elf = binary::ElfFile::open(path);
  auto plan = plan_gc_hooks(elf, {3, 8, 18}, GcHookChoice::Auto);
  ASSERT_EQ(plan.kind, Kind::Uprobe) << plan.missing;
  EXPECT_EQ(names(plan.functions), (std::vector<std::string>{"collect.constprop.0", "collect.constprop.1"}));
  // Neither clone keeps a PyThreadState* first (3.8's collect takes the runtime's GC state).
  EXPECT_EQ(plan.arg0_is_tstate, (std::vector<bool>{false, false}));
}

// (pyenv version, its collector's symbol)
class PlainCollector : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(PlainCollector, PassesTheThreadStateFirst) {
  const auto& [version, collector] = GetParam();
  const std::string path = pyenv_lib(version);
  REQUIRE_FILE(path);
  auto elf = binary::ElfFile::open(path);
  int minor = std::stoi(version.substr(2));
  auto plan = plan_gc_hooks(elf, {3, minor, 0}, GcHookChoice::Auto);
  ASSERT_EQ(plan.kind, Kind::Uprobe) << plan.missing;
  EXPECT_EQ(names(plan.functions), std::vector<std::string>{collector});
  EXPECT_EQ(plan.arg0_is_tstate, std::vector<bool>{true});
  EXPECT_NE(plan.description.find(minor >= 13 ? "including gc.callbacks" : "without gc.callbacks"), std::string::npos)
      << plan.description;
  auto forced = plan_gc_hooks(elf, {3, minor, 0}, GcHookChoice::Usdt);
  EXPECT_EQ(forced.kind, Kind::None);
  EXPECT_NE(forced.missing.find("built without --with-dtrace"), std::string::npos) << forced.missing;
}

INSTANTIATE_TEST_SUITE_P(GcHooks, PlainCollector,
                         ::testing::Values(std::pair<std::string, std::string>{"3.9.18", "collect"},
                                           std::pair<std::string, std::string>{"3.10.13", "gc_collect_main"},
                                           std::pair<std::string, std::string>{"3.11.7", "gc_collect_main"},
                                           std::pair<std::string, std::string>{"3.12.1", "gc_collect_main"},
                                           std::pair<std::string, std::string>{"3.13.0", "gc_collect_main"}),
                         [](const auto& info) {
                           std::string name = "pyenv_" + info.param.first;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

TEST(GcHooks, ColdPartsAreNeverEntryPoints) {
  const std::string path = pyenv_lib("3.11.7");
  REQUIRE_FILE(path);
  auto elf = binary::ElfFile::open(path);
  auto all = names(elf.symbol_and_clones("_PyEval_EvalFrameDefault"));
  ASSERT_NE(std::find(all.begin(), all.end(), "_PyEval_EvalFrameDefault.cold"), all.end())
      << "this build has no .cold part to test with";
  EXPECT_EQ(names(elf.function_entries("_PyEval_EvalFrameDefault")),
            std::vector<std::string>{"_PyEval_EvalFrameDefault"});
}

}  // namespace
}  // namespace pyebpf::trackers
