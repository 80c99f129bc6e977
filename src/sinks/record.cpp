// SPDX-License-Identifier: Apache-2.0
#include "sinks/record.hpp"

#include <cstdint>
#include <stdexcept>

namespace pyebpf::sinks {
namespace {

using T = ColumnType;
using K = Record::Kind;

bool integer_column(T t) {
  return t == T::UInt8 || t == T::UInt16 || t == T::UInt32 || t == T::UInt64 || t == T::Int32 || t == T::Int64;
}

// Which value kinds a column of type `t` holds.
bool accepts(T t, K k) {
  switch (k) {
    case K::UInt:
    case K::Int:
      return integer_column(t);
    case K::Float:
      return t == T::Float64;
    case K::Bool:
      return t == T::Bool;
    case K::Text:
      return t == T::String || t == T::Symbol || t == T::Time;
    case K::Time:
      return t == T::Time;
    case K::Texts:
      return t == T::StringArray;
    case K::PyStack:
      return t == T::PyStack;
    case K::NativeStack:
      return t == T::NativeStack;
    case K::Json:
      return t == T::Json;
    case K::Absent:
    case K::Null:
      return true;
  }
  return false;
}

const char* kind_name(K k) {
  static const char* const names[] = {"absent", "null", "uint",  "int",          "float",        "bool",
                                      "text",   "time", "texts", "python stack", "native stack", "json"};
  return names[static_cast<int>(k)];
}

}  // namespace

Record::Record(const TableSchema& schema) : schema_(&schema), values_(schema.columns().size()) {}

void Record::clear() {
  for (auto& v : values_) v.kind = Kind::Absent;
  text_.clear();
  texts_.clear();
  py_frames_.clear();
  native_frames_.clear();
  json_.clear();
  open_stack_ = -1;
}

Record::Value& Record::slot(FieldId f, Kind kind) {
  if (f >= values_.size()) throw std::logic_error("metric " + metric() + ": no field " + std::to_string(f));
  const Column& c = schema_->column(f);
  if (!accepts(c.type, kind) || (kind == Kind::Null && !c.nullable))
    throw std::logic_error("metric " + metric() + ": field " + c.name + " cannot hold a " + kind_name(kind) + " value");
  Value& v = values_[f];
  v.kind = kind;
  return v;
}

void Record::wrong_kind(FieldId f, Kind wanted) const {
  const std::string name = f < values_.size() ? schema_->column(f).name : std::to_string(f);
  throw std::logic_error("metric " + metric() + ": field " + name + " read as " + kind_name(wanted) + " but holds " +
                         (f < values_.size() ? kind_name(values_[f].kind) : "nothing (no such field)"));
}

const Record::Value& Record::held(FieldId f, Kind kind) const {
  if (f >= values_.size() || values_[f].kind != kind) wrong_kind(f, kind);
  return values_[f];
}

std::uint64_t Record::uint_value(FieldId f) const {
  if (f < values_.size()) {
    const Value& v = values_[f];
    if (v.kind == Kind::UInt) return v.u;
    if (v.kind == Kind::Int && v.i >= 0) return static_cast<std::uint64_t>(v.i);
  }
  wrong_kind(f, Kind::UInt);
}

std::int64_t Record::int_value(FieldId f) const {
  if (f < values_.size()) {
    const Value& v = values_[f];
    if (v.kind == Kind::Int) return v.i;
    if (v.kind == Kind::UInt && v.u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(v.u);
  }
  wrong_kind(f, Kind::Int);
}

Record::Span Record::store(std::string_view text) {
  Span s{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(text.size())};
  const char* base = text_.data();
  if (!text.empty() && text.data() >= base && text.data() < base + text_.size())
    text_.append(text_, static_cast<std::size_t>(text.data() - base), text.size());  // one field copied to another
  else
    text_.append(text);
  return s;
}

void Record::set_null(FieldId f) {
  slot(f, Kind::Null);
}
void Record::set_uint(FieldId f, std::uint64_t v) {
  slot(f, Kind::UInt).u = v;
}
void Record::set_int(FieldId f, std::int64_t v) {
  slot(f, Kind::Int).i = v;
}
void Record::set_float(FieldId f, double v) {
  slot(f, Kind::Float).d = v;
}
void Record::set_bool(FieldId f, bool v) {
  slot(f, Kind::Bool).b = v;
}
void Record::set_time(FieldId f, std::int64_t epoch_us) {
  slot(f, Kind::Time).i = epoch_us;
}

void Record::set_text(FieldId f, std::string_view v) {
  Span s = store(v);
  Value& slot_value = slot(f, Kind::Text);
  slot_value.begin = s.begin;
  slot_value.count = s.size;
}

void Record::set_texts(FieldId f, const std::vector<std::string>& v) {
  Value& s = slot(f, Kind::Texts);
  s.begin = static_cast<std::uint32_t>(texts_.size());
  s.count = static_cast<std::uint32_t>(v.size());
  for (const auto& t : v) texts_.push_back(store(t));
}

void Record::set_json(FieldId f, nlohmann::ordered_json v) {
  Value& s = slot(f, Kind::Json);
  s.begin = static_cast<std::uint32_t>(json_.size());
  json_.push_back(std::move(v));
}

void Record::begin_py_stack(FieldId f) {
  Value& v = slot(f, Kind::PyStack);
  v.begin = static_cast<std::uint32_t>(py_frames_.size());
  v.count = 0;
  open_stack_ = f;
}

void Record::add_py_frame(const stack::PyFrame& frame) {
  if (open_stack_ < 0 || values_[open_stack_].kind != Kind::PyStack)
    throw std::logic_error("metric " + metric() + ": add_py_frame without begin_py_stack");
  py_frames_.push_back({store(frame.function), store(frame.file), frame.line, frame.first_line});
  ++values_[open_stack_].count;
}

void Record::begin_native_stack(FieldId f) {
  Value& v = slot(f, Kind::NativeStack);
  v.begin = static_cast<std::uint32_t>(native_frames_.size());
  v.count = 0;
  open_stack_ = f;
}

void Record::add_native_frame(const stack::NativeFrame& frame) {
  if (open_stack_ < 0 || values_[open_stack_].kind != Kind::NativeStack)
    throw std::logic_error("metric " + metric() + ": add_native_frame without begin_native_stack");
  native_frames_.push_back({frame.kind, store(frame.symbol), store(frame.module), frame.address});
  ++values_[open_stack_].count;
}

std::optional<double> Record::number(FieldId f) const {
  const Value& v = values_[f];
  switch (v.kind) {
    case Kind::UInt:
      return static_cast<double>(v.u);
    case Kind::Int:
      return static_cast<double>(v.i);
    case Kind::Float:
      return v.d;
    case Kind::Bool:
      return v.b ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

std::string_view Record::text(FieldId f) const {
  const Value& v = values_[f];
  return v.kind == Kind::Text ? view({v.begin, v.count}) : std::string_view();
}

std::string_view Record::text_at(FieldId f, std::size_t i) const {
  return view(texts_[values_[f].begin + i]);
}

stack::PyFrame Record::py_frame(FieldId f, std::size_t i) const {
  const StoredPyFrame& s = py_frames_[values_[f].begin + i];
  return {view(s.function), view(s.file), s.line, s.first_line};
}

stack::NativeFrame Record::native_frame(FieldId f, std::size_t i) const {
  const StoredNativeFrame& s = native_frames_[values_[f].begin + i];
  return {s.kind, view(s.symbol), view(s.module), s.address};
}

}  // namespace pyebpf::sinks
