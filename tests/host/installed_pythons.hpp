// SPDX-License-Identifier: Apache-2.0
// Where tools/install-deps puts the interpreters these tests read: pyenv's
// builds under $HOME, Debian's python3.11, Debian sid's root.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pyebpf::host {

inline constexpr const char* kDebianPython = "/usr/bin/python3.11";
inline constexpr const char* kSidRoot = "/var/cache/pyebpf/sid";  // tools/install-sid-root

// pyenv's build of `version` ("3.11.7"): its directory and its minor ("3.11").
inline std::string pyenv_dir(const std::string& version) {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.pyenv/versions/" + version;
}
inline std::string minor_of(const std::string& version) {
  return version.substr(0, version.rfind('.'));
}

// pyenv's shared libpython of `version` ("3.11.7").
inline std::string pyenv_lib(const std::string& version) {
  return pyenv_dir(version) + "/lib/libpython" + minor_of(version) + ".so.1.0";
}

// pyenv's interpreter of `version` ("3.12.1").
inline std::string pyenv_python(const std::string& version) {
  return pyenv_dir(version) + "/bin/python" + minor_of(version);
}

}  // namespace pyebpf::host

// Skips the test, naming the file, where this machine lacks it.
#define REQUIRE_FILE(path)                          \
  if (access(std::string(path).c_str(), R_OK) != 0) \
  GTEST_SKIP() << (path) << " is not on this machine (tools/install-deps)"
