// SPDX-License-Identifier: Apache-2.0
// The string decoders on arbitrary bytes: a code object's names and a
// thread's name come from target memory, file names from its maps. Whatever
// comes in, what goes out must be valid UTF-8 that pyebpf's JSON writer
// escapes so that it reads back unchanged (nlohmann's parser is the
// independent UTF-8 check).
// Input: code unit width (1 byte, used as is: 1, 2 and 4 are valid), then the units.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "python/unicode.hpp"
#include "sinks/json_writer.hpp"

using namespace pyebpf;

namespace {

void check_valid_utf8(const std::string& text) {
  if (python::sanitize_utf8(text) != text) std::abort();  // valid UTF-8 passes unchanged
  std::string json;
  sinks::append_json_string(json, text);
  auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_string() || parsed.get<std::string>() != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::span<const std::uint8_t> units(data + 1, size - 1);
  check_valid_utf8(python::code_units_to_utf8(units, data[0]));
  check_valid_utf8(python::sanitize_utf8(std::string(units.begin(), units.end())));
  return 0;
}
