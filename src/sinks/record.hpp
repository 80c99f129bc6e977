// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sinks/schema.hpp"
#include "stack/frames.hpp"

namespace pyebpf::sinks {

// One event: a schema and a typed value per field. A decoder fills one Record
// per event and hands it to the sinks; the Record keeps its buffers between
// events (clear() keeps capacity), so decoding and serialising an event
// allocates nothing once the buffers have grown. Text (names, frames) is
// copied into the Record's own buffer, so a Record is a plain value: it may
// be copied (queued sinks do) and outlives the caches its text came from.
//
// Each field is absent (not printed), null, or holds a value of a kind its
// column type accepts; setting a kind the schema does not declare for that
// field is a programming error (std::logic_error), caught by the decoders'
// unit tests.
class Record {
 public:
  enum class Kind : std::uint8_t {
    Absent,
    Null,
    UInt,
    Int,
    Float,
    Bool,
    Text,
    Time,
    Texts,
    PyStack,
    NativeStack,
    Json
  };

  explicit Record(const TableSchema& schema);

  const TableSchema& schema() const { return *schema_; }
  const std::string& metric() const { return schema_->metric(); }
  // Every field absent again; buffers kept.
  void clear();

  // --- filling (decoders) ---
  void set_null(FieldId f);
  void set_uint(FieldId f, std::uint64_t v);
  void set_int(FieldId f, std::int64_t v);
  // set_int or set_uint by the signedness of `v`'s type.
  template <typename Integer>
  void set_integer(FieldId f, Integer v) {
    if constexpr (std::is_signed_v<Integer>)
      set_int(f, v);
    else
      set_uint(f, v);
  }
  void set_float(FieldId f, double v);
  void set_bool(FieldId f, bool v);
  void set_text(FieldId f, std::string_view v);  // also a Time field read back from text
  void set_time(FieldId f, std::int64_t epoch_us);
  void set_texts(FieldId f, const std::vector<std::string>& v);
  void set_json(FieldId f, nlohmann::ordered_json v);
  // A stack is built frame by frame, root first: begin_*(), then add_*() for
  // each frame, before the next stack of the record is begun.
  void begin_py_stack(FieldId f);
  void add_py_frame(const stack::PyFrame& frame);
  void begin_native_stack(FieldId f);
  void add_native_frame(const stack::NativeFrame& frame);

  // --- reading (sinks) ---
  Kind kind(FieldId f) const { return values_[f].kind; }
  bool has(FieldId f) const { return kind(f) != Kind::Absent && kind(f) != Kind::Null; }
  // A field read as a kind it does not hold (absent, null, cleared, another
  // type) is a programming error (std::logic_error), as setting one is: a
  // stale value must never pass for data. Integers read either way when the
  // value fits (stored runs read back may hold a pid as Int).
  std::uint64_t uint_value(FieldId f) const;
  std::int64_t int_value(FieldId f) const;
  double float_value(FieldId f) const { return held(f, Kind::Float).d; }
  bool bool_value(FieldId f) const { return held(f, Kind::Bool).b; }
  std::int64_t time_us(FieldId f) const { return held(f, Kind::Time).i; }
  // Any number (UInt, Int, Float, Bool) as a double; nullopt otherwise.
  std::optional<double> number(FieldId f) const;
  // Text; empty unless the field holds Text.
  std::string_view text(FieldId f) const;
  const nlohmann::ordered_json& json(FieldId f) const { return json_[values_[f].begin]; }
  // Texts and stacks: their length, and element i (root first for stacks).
  std::size_t size(FieldId f) const { return values_[f].count; }
  std::string_view text_at(FieldId f, std::size_t i) const;
  stack::PyFrame py_frame(FieldId f, std::size_t i) const;
  stack::NativeFrame native_frame(FieldId f, std::size_t i) const;

 private:
  struct Span {
    std::uint32_t begin = 0, size = 0;
  };
  struct Value {
    Kind kind = Kind::Absent;
    union {
      std::uint64_t u;
      std::int64_t i;
      double d;
      bool b;
    };
    std::uint32_t begin = 0, count = 0;  // Text: bytes of text_; lists: elements of their vector
  };
  struct StoredPyFrame {
    Span function, file;
    std::int32_t line, first_line;
  };
  struct StoredNativeFrame {
    stack::NativeFrame::Kind kind;
    Span symbol, module;
    std::uint64_t address;
  };

  Value& slot(FieldId f, Kind kind);
  const Value& held(FieldId f, Kind kind) const;
  [[noreturn]] void wrong_kind(FieldId f, Kind wanted) const;
  Span store(std::string_view text);
  std::string_view view(Span s) const { return std::string_view(text_).substr(s.begin, s.size); }

  const TableSchema* schema_;
  std::vector<Value> values_;
  std::string text_;
  std::vector<Span> texts_;
  std::vector<StoredPyFrame> py_frames_;
  std::vector<StoredNativeFrame> native_frames_;
  std::vector<nlohmann::ordered_json> json_;
  int open_stack_ = -1;  // field of the stack being built
};

}  // namespace pyebpf::sinks
