// SPDX-License-Identifier: Apache-2.0
#include "sinks/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/clock.hpp"

namespace pyebpf::sinks {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (Unicode table
// 3-7: no overlongs, surrogates or code points above U+10FFFF), 0 if none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return at(k) >= lo && at(k) <= hi; };
  unsigned c = at(i);
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

constexpr bool needs_no_escape(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

// Appends `text` escaped as nlohmann does with ensure_ascii off; false (with
// `out` partly written) at the first byte that is not valid UTF-8.
bool append_escaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = 0;
  while (i < text.size()) {
    // Characters that need no escape go out as one run: frames and paths
    // are almost all plain ASCII (one push_back per character was 11% of
    // pyebpf's CPU under a 500-thread GIL convoy).
    std::size_t plain = i;
    while (plain < text.size() && needs_no_escape(static_cast<unsigned char>(text[plain]))) ++plain;
    if (plain > i) {
      out.append(text.data() + i, plain - i);
      i = plain;
      continue;
    }
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t n = utf8_sequence(text, i);
      if (n == 0) return false;
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return true;
}

template <typename Int>
void append_integer(std::string& out, Int value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

void append_dump(std::string& out, const nlohmann::ordered_json& value) {
  out += value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  const std::size_t start = out.size();
  out += '"';
  if (append_escaped(out, text)) {
    out += '"';
    return;
  }
  // Invalid UTF-8 (rare: names read from a target): nlohmann's own
  // replacement rules, so the bytes stay what they always were.
  out.resize(start);
  append_dump(out, nlohmann::ordered_json(std::string(text)));
}

void append_json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  char* end = nlohmann::detail::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

void JsonWriter::append(std::string& out, const Record& r) {
  const auto& columns = r.schema().columns();
  out += "{\"metric\":";
  append_json_string(out, r.metric());
  for (FieldId f = 0; f < columns.size(); ++f) {
    if (r.kind(f) == Record::Kind::Absent) continue;
    out += ",\"";
    out += columns[f].name;
    out += "\":";
    append_value(out, r, f);
  }
  out += '}';
}

void JsonWriter::append_value(std::string& out, const Record& r, FieldId f) {
  using K = Record::Kind;
  switch (r.kind(f)) {
    case K::Absent:
    case K::Null:
      out += "null";
      break;
    case K::UInt:
      append_integer(out, r.uint_value(f));
      break;
    case K::Int:
      append_integer(out, r.int_value(f));
      break;
    case K::Float:
      append_json_number(out, r.float_value(f));
      break;
    case K::Bool:
      out += r.bool_value(f) ? "true" : "false";
      break;
    case K::Text:
      append_json_string(out, r.text(f));
      break;
    case K::Time:
      out += '"';
      append_iso8601_utc(out, r.time_us(f));
      out += '"';
      break;
    case K::Texts:
      out += '[';
      for (std::size_t i = 0; i < r.size(f); ++i) {
        if (i) out += ',';
        append_json_string(out, r.text_at(f, i));
      }
      out += ']';
      break;
    case K::PyStack:
      // One string: "func (file:line);..." root first.
      scratch_.clear();
      for (std::size_t i = 0; i < r.size(f); ++i) {
        if (i) scratch_ += ';';
        stack::append_text(scratch_, r.py_frame(f, i));
      }
      append_json_string(out, scratch_);
      break;
    case K::NativeStack:
      out += '[';
      for (std::size_t i = 0; i < r.size(f); ++i) {
        if (i) out += ',';
        scratch_.clear();
        stack::append_text(scratch_, r.native_frame(f, i));
        append_json_string(out, scratch_);
      }
      out += ']';
      break;
    case K::Json:
      append_dump(out, r.json(f));
      break;
  }
}

std::string to_json_line(const Record& record) {
  std::string out;
  JsonWriter().append(out, record);
  return out;
}

}  // namespace pyebpf::sinks
