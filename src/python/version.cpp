// SPDX-License-Identifier: Apache-2.0
#include "python/version.hpp"

#include <regex>

namespace pyebpf::python {

std::string PyVersion::str() const {
  std::string s = minor_str();
  if (micro >= 0) s += "." + std::to_string(micro) + release;
  return s;
}

std::string PyVersion::minor_str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<PyVersion> version_from_hex(std::uint32_t hex) {
  PyVersion v;
  v.major = static_cast<int>((hex >> 24) & 0xff);
  v.minor = static_cast<int>((hex >> 16) & 0xff);
  v.micro = static_cast<int>((hex >> 8) & 0xff);
  unsigned level = (hex >> 4) & 0xf;
  unsigned serial = hex & 0xf;
  switch (level) {
    case 0xA:
      v.release = "a" + std::to_string(serial);
      break;
    case 0xB:
      v.release = "b" + std::to_string(serial);
      break;
    case 0xC:
      v.release = "rc" + std::to_string(serial);
      break;
    case 0xF:
      break;
    default:
      return std::nullopt;
  }
  if (v.major < 2 || v.major > 9) return std::nullopt;
  return v;
}

std::optional<PyVersion> version_from_filename(std::string_view path) {
  std::string_view base = path.substr(path.find_last_of('/') + 1);
  static const std::regex pattern(R"(^(?:lib)?python(\d)\.(\d{1,2})[a-z]*(?:\.so.*)?$)");
  std::cmatch m;
  if (!std::regex_match(base.begin(), base.end(), m, pattern)) return std::nullopt;
  PyVersion v;
  v.major = std::stoi(m[1].str());
  v.minor = std::stoi(m[2].str());
  return v;
}

}  // namespace pyebpf::python
