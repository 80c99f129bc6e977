// SPDX-License-Identifier: Apache-2.0
// The string decoders on arbitrary bytes: a code object's names and a
// thread's name come from target memory, file names from its maps. Whatever
// comes in, what goes out must be valid UTF-8 that survives a JSON round trip
// (nlohmann's parser is the independent UTF-8 check) unchanged.
// Input: code unit width (1 byte, used as is: 1, 2 and 4 are valid), then the units.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "python/unicode.hpp"
#include "sinks/sink.hpp"

using namespace pyebpf;

namespace {

void check_valid_utf8(const std::string& text) {
  if (python::sanitize_utf8(text) != text) std::abort();  // valid UTF-8 passes unchanged
  auto parsed = sinks::Event::parse(sinks::to_json_line(sinks::Event{{"s", text}}), nullptr, false);
  if (parsed.is_discarded() || parsed.at("s").get<std::string>() != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::span<const std::uint8_t> units(data + 1, size - 1);
  check_valid_utf8(python::code_units_to_utf8(units, data[0]));
  check_valid_utf8(python::sanitize_utf8(std::string(units.begin(), units.end())));
  return 0;
}
