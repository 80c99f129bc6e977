// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

#include "sinks/record.hpp"

namespace pyebpf::sinks {

// Writes records as JSON lines straight from their typed values, into the
// caller's buffer: no JSON tree per event. The text is byte for byte what
// nlohmann::ordered_json::dump() printed for the same values (field order,
// number formats, escapes, U+FFFD for invalid UTF-8), so users' jq scripts
// and stored files keep working; json_writer_test checks that equivalence.
class JsonWriter {
 public:
  // Appends one line (without the newline): "metric" first, then every field
  // that is not absent, in schema order.
  void append(std::string& out, const Record& record);
  // One field's value (not absent): what append() writes after its name.
  void append_value(std::string& out, const Record& record, FieldId field);

 private:
  std::string scratch_;  // a stack's text before escaping, reused
};

// One record as a JSON line: for tests and one-off uses.
std::string to_json_line(const Record& record);

// `text` as a JSON string, quotes included.
void append_json_string(std::string& out, std::string_view text);
// A double as nlohmann prints it (shortest round trip, "1.0" for whole
// numbers, null when not finite).
void append_json_number(std::string& out, double value);

}  // namespace pyebpf::sinks
