// SPDX-License-Identifier: Apache-2.0
// Targets that feed pyebpf hostile input: crafted ELF files mapped under
// libpython's name (tests/workloads/hostile_elves.py). pyebpf must skip each
// with a warning naming it, never crash or hang, and profile the real
// interpreter as usual.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

class HostileElvesE2E : public ::testing::TestWithParam<PythonBuild> {};

TEST_P(HostileElvesE2E, CraftedElfFilesNamedLikeLibpythonAreSkipped) {
  Workload workload(GetParam(), "hostile_elves.py", {"3"});
  const auto crafted = workload.ready().at("crafted");
  ASSERT_EQ(crafted.size(), 4u);
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "hostile", "--enable", "py_stack"});
  pyebpf.wait_ready();
  workload.go();
  const double cpu_seconds = workload.result().at("cpu_seconds");
  pyebpf.stop();
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(pyebpf.exit_status(), 0) << err;
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  // The header-level breakages cannot be parsed at all: each is named as skipped.
  for (const char* name : {"libpython3-truncated.so", "libpython3-huge-sections.so", "libpython3-overlapping.so"}) {
    EXPECT_NE(err.find(std::string("skipped ")), std::string::npos) << err;
    EXPECT_NE(err.find(name), std::string::npos) << name << " not named in:\n" << err;
  }
  // The real interpreter is profiled as if nothing had been mapped.
  std::size_t in_spin = 0;
  for (const auto& e : pyebpf.events("py_stack")) {
    in_spin += e.at("stack").get<std::string>().find("spin_in_known_function") != std::string::npos;
  }
  EXPECT_GE(in_spin, static_cast<std::size_t>(cpu_seconds * 99 * 0.5)) << cpu_seconds << " s of CPU";
}

std::vector<PythonBuild> host_pythons_3_11() {
  std::vector<PythonBuild> out;
  for (auto& p : test_pythons(11, 11)) {
    if (p.setup == RootSetUp::Host) out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pythons, HostileElvesE2E, ::testing::ValuesIn(host_pythons_3_11()),
                         [](const auto& info) { return build_test_name(info.param); });

}  // namespace
}  // namespace pyebpf::e2e
