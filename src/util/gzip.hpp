// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

namespace pyebpf {

// `data` compressed as one gzip member (RFC 1952), for HTTP
// `Content-Encoding: gzip`. Level 1-9; JSON rows shrink ~10x even at 1.
std::string gzip_compress(std::string_view data, int level = 3);

// Inverse, for tests.
std::string gzip_decompress(std::string_view data);

}  // namespace pyebpf
