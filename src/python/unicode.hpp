// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace pyebpf::python {

// Encodes CPython's fixed-width string storage as UTF-8. `kind` is the code
// unit width (PyUnicode_1BYTE_KIND = 1: Latin-1, 2: UCS-2, 4: UCS-4). Lone
// surrogates and values beyond U+10FFFF become U+FFFD, so the result is always
// valid UTF-8 (JSON output depends on it).
std::string code_units_to_utf8(std::span<const std::uint8_t> raw, unsigned kind);

// Replaces invalid UTF-8 sequences with U+FFFD (for file names and other bytes).
std::string sanitize_utf8(std::string_view text);

}  // namespace pyebpf::python
