// SPDX-License-Identifier: Apache-2.0
#include "sinks/record_input.hpp"

#include <cmath>
#include <cstdint>
#include <optional>

namespace pyebpf::sinks {
namespace {

using Json = nlohmann::ordered_json;

std::string text_of(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The integer a JSON value holds for a column of integer type `t`, or nullopt
// when it holds none: a file handed to `pyebpf report` may hold anything, and
// the report turns counts, generations and tids into doubles and back, where
// a value beyond ±2^53 (where doubles stop counting exactly) is garbage and a
// negative one in an unsigned column is undefined behaviour. A whole number
// merely too large for the column's type is kept: the sinks decide (ClickHouse
// keeps it in `extra`, as it does for live events).
std::optional<std::int64_t> whole(const Json& v, ColumnType t) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  double d;
  if (v.is_number_integer())
    d = v.is_number_unsigned() ? static_cast<double>(v.get<std::uint64_t>())
                               : static_cast<double>(v.get<std::int64_t>());
  else if (v.is_number_float())
    d = std::round(v.get<double>());
  else if (v.is_boolean())
    d = v.get<bool>() ? 1 : 0;
  else
    return std::nullopt;
  const bool is_unsigned =
      t == ColumnType::UInt8 || t == ColumnType::UInt16 || t == ColumnType::UInt32 || t == ColumnType::UInt64;
  if (!(d >= (is_unsigned ? 0 : -kExact) && d <= kExact)) return std::nullopt;  // NaN too
  return static_cast<std::int64_t>(d);
}

// "func (file:line);..." root first; a frame that does not parse is kept
// whole as its function.
void set_py_stack(Record& r, FieldId f, const std::string& text) {
  r.begin_py_stack(f);
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto semi = text.find(';', pos);
    if (semi == std::string::npos) semi = text.size();
    std::string_view frame(text.data() + pos, semi - pos);
    if (!frame.empty()) r.add_py_frame(stack::parse_py_frame(frame).value_or(stack::PyFrame{frame, {}, 0}));
    pos = semi + 1;
  }
}

// An array of frame texts.
void set_native_stack(Record& r, FieldId f, const Json& frames) {
  r.begin_native_stack(f);
  for (const auto& item : frames) {
    std::string frame = text_of(item);
    r.add_native_frame(stack::parse_native_frame(frame));
  }
}

void set_value(Record& r, FieldId f, const Column& c, const Json& v) {
  using T = ColumnType;
  if (v.is_null()) {
    if (c.nullable) r.set_null(f);
    return;
  }
  switch (c.type) {
    case T::Time:
    case T::String:
    case T::Symbol:
      r.set_text(f, text_of(v));
      break;
    case T::UInt8:
    case T::UInt16:
    case T::UInt32:
    case T::UInt64:
    case T::Int32:
    case T::Int64:
      if (auto n = whole(v, c.type)) {
        if (*n >= 0)
          r.set_uint(f, static_cast<std::uint64_t>(*n));
        else
          r.set_int(f, *n);
      }
      break;
    case T::Float64:
      if (v.is_number()) r.set_float(f, v.get<double>());
      break;
    case T::Bool:
      if (v.is_boolean()) r.set_bool(f, v.get<bool>());
      if (v.is_number()) r.set_bool(f, v.get<double>() != 0);
      break;
    case T::StringArray:
      if (v.is_array()) {
        std::vector<std::string> items;
        for (const auto& item : v) items.push_back(text_of(item));
        r.set_texts(f, items);
      }
      break;
    case T::Json:
      r.set_json(f, v);
      break;
    case T::PyStack:
      if (v.is_string()) set_py_stack(r, f, v.get_ref<const std::string&>());
      break;
    case T::NativeStack:
      if (v.is_array()) set_native_stack(r, f, v);
      break;
  }
}

}  // namespace

void record_from_json(const Json& object, Record& out) {
  out.clear();
  const auto& columns = out.schema().columns();
  for (FieldId f = 0; f < columns.size(); ++f) {
    auto it = object.find(columns[f].name);
    if (it != object.end()) set_value(out, f, columns[f], *it);
  }
}

}  // namespace pyebpf::sinks
