// SPDX-License-Identifier: Apache-2.0
#include "python/unicode.hpp"

#include <cstring>

namespace pyebpf::python {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

void append_utf8(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string code_units_to_utf8(std::span<const std::uint8_t> raw, unsigned kind) {
  std::string out;
  if (kind != 1 && kind != 2 && kind != 4) return out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i + kind <= raw.size(); i += kind) {
    char32_t cp = 0;
    if (kind == 1) {
      cp = raw[i];
    } else if (kind == 2) {
      std::uint16_t u;
      std::memcpy(&u, raw.data() + i, 2);
      cp = u;
    } else {
      std::uint32_t u;
      std::memcpy(&u, raw.data() + i, 4);
      cp = u;
    }
    append_utf8(out, cp);
  }
  return out;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; ok && k < len; ++k) {
      auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms as well as surrogates and out-of-range values.
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) ok = false;
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      append_utf8(out, kReplacement);
      ++i;
    }
  }
  return out;
}

}  // namespace pyebpf::python
