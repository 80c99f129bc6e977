// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pyebpf::python {

struct PyVersion {
  int major = 0;
  int minor = 0;
  int micro = -1;       // -1 when only major.minor is known
  std::string release;  // "", "a1", "b2", "rc1"

  std::string str() const;        // "3.11.7", "3.13.0rc1", "3.10"
  std::string minor_str() const;  // "3.11"
  bool operator==(const PyVersion&) const = default;
};

// Decodes PY_VERSION_HEX (the value of the Py_Version symbol, 3.11+):
// 0xMMmmppLS = major, minor, micro, release level (a=0xA b=0xB rc=0xC final=0xF), serial.
std::optional<PyVersion> version_from_hex(std::uint32_t hex);

// major.minor from a CPython binary's file name: "python3.10", "libpython3.9d.so.1.0".
std::optional<PyVersion> version_from_filename(std::string_view path);

}  // namespace pyebpf::python
