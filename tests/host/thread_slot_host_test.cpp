// SPDX-License-Identifier: Apache-2.0
// The thread-local load decoder on a real interpreter build (Debian sid's).
#include <gtest/gtest.h>

#include <string>

#include "binary/elf_file.hpp"
#include "installed_pythons.hpp"
#include "python/thread_slot.hpp"

namespace pyebpf::python {
namespace {

TEST(DecodeTlsLoad, DebianSid315KeepsTheGilstateNextToTheAttachedThreadState) {
  const std::string exe = std::string(host::kSidRoot) + "/usr/bin/python3.15";
  REQUIRE_FILE(exe);
  auto elf = binary::ElfFile::open(exe);
  auto decode = [&](const char* name) {
    auto sym = elf.symbol(name);
    EXPECT_TRUE(sym) << name;
    auto code = sym ? elf.read(sym->value, 16) : std::nullopt;
    return code ? decode_tls_load(*code) : std::nullopt;
  };
  auto gilstate = decode("PyGILState_GetThisThreadState");
  auto attached = decode("PyThreadState_GetUnchecked");
  ASSERT_TRUE(gilstate);
  ASSERT_TRUE(attached);
  EXPECT_NE(*gilstate, *attached) << "_Py_tss_gilstate and _Py_tss_tstate are two variables";
}

}  // namespace
}  // namespace pyebpf::python
