// SPDX-License-Identifier: Apache-2.0
// The JSON lines writer against nlohmann::ordered_json::dump(), which wrote
// every line before it: same bytes for every kind of value, including
// escapes, invalid UTF-8 and the shortest round-trip form of doubles.
#include "sinks/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace pyebpf::sinks {
namespace {

using Json = nlohmann::ordered_json;

std::string dumped(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

struct EveryKind : TableSchema {
  using T = ColumnType;
  EveryKind() : TableSchema("every_kind", "ebpf_every_kind", Prefix::Thread) {}
  const FieldId count = add("count", T::UInt64);
  const FieldId delta = add("delta", T::Int64);
  const FieldId ms = add("ms", T::Float64);
  const FieldId flag = add("flag", T::Bool);
  const FieldId maybe = add("maybe", T::UInt32, true);
  const FieldId when = add("when", T::Time);
  const FieldId words = add("words", T::StringArray);
  const FieldId py = add("py", T::PyStack);
  const FieldId native = add("native", T::NativeStack);
  const FieldId doc = add("doc", T::Json);
  const FieldId never = add("never", T::String);  // left absent: not printed
};

TEST(JsonWriter, EveryKindOfValuePrintsAsNlohmannDid) {
  EveryKind s;
  Record r(s);
  namespace tf = thread_fields;
  r.set_text(tf::env, "prod");
  r.set_time(tf::ts, 1795968595541716);
  r.set_int(tf::ts_us, 1795968595541716);
  r.set_uint(tf::pid, 4242);
  r.set_uint(tf::tid, 4243);
  r.set_uint(tf::container_pid, 1);
  r.set_uint(tf::container_tid, 7);
  r.set_text(tf::comm, "gunicorn");
  r.set_text(tf::thread_name, "計算する \"worker\"\n");
  r.set_uint(s.count, std::numeric_limits<std::uint64_t>::max());
  r.set_int(s.delta, -1);
  r.set_float(s.ms, 12.5);
  r.set_bool(s.flag, false);
  r.set_null(s.maybe);
  r.set_time(s.when, -1);  // before the epoch still prints as a time
  r.set_texts(s.words, {"close_wait=150", ""});
  r.begin_py_stack(s.py);
  r.add_py_frame({"<module>", "/srv/app.py", 1});
  r.add_py_frame({"Class.handle", "/srv/my app/views.py", 120});
  r.begin_native_stack(s.native);
  r.add_native_frame({stack::NativeFrame::Kind::Truncated});
  r.add_native_frame({stack::NativeFrame::Kind::Symbol, "schedule", ""});
  r.add_native_frame({stack::NativeFrame::Kind::Symbol, "nft_do_chain", "nf_tables"});
  r.add_native_frame({stack::NativeFrame::Kind::InModule, "", "libc.so.6", 0x8a2b});
  r.add_native_frame({stack::NativeFrame::Kind::Address, "", "", 0x7f0012345678});
  r.set_json(s.doc, Json::array({Json{{"dst", "10.0.0.1:5432"}, {"count", 3}}}));

  Json expected;
  expected["metric"] = "every_kind";
  expected["env"] = "prod";
  expected["ts"] = "2026-11-29T16:09:55.541716Z";
  expected["ts_us"] = 1795968595541716;
  expected["pid"] = 4242u;
  expected["tid"] = 4243u;
  expected["container_pid"] = 1u;
  expected["container_tid"] = 7u;
  expected["comm"] = "gunicorn";
  expected["thread_name"] = "計算する \"worker\"\n";
  expected["count"] = std::numeric_limits<std::uint64_t>::max();
  expected["delta"] = -1;
  expected["ms"] = 12.5;
  expected["flag"] = false;
  expected["maybe"] = nullptr;
  expected["when"] = "1969-12-31T23:59:59.999999Z";
  expected["words"] = {"close_wait=150", ""};
  expected["py"] = "<module> (/srv/app.py:1);Class.handle (/srv/my app/views.py:120)";
  expected["native"] = {"[truncated]", "schedule", "nft_do_chain [nf_tables]", "[unknown] [libc.so.6+0x8a2b]",
                        "[unknown] [0x7f0012345678]"};
  expected["doc"] = Json::array({Json{{"dst", "10.0.0.1:5432"}, {"count", 3}}});
  EXPECT_EQ(to_json_line(r), dumped(expected));

  // The buffers are reused: a cleared record prints only what is set again.
  r.clear();
  r.set_text(tf::env, "x");
  EXPECT_EQ(to_json_line(r), R"({"metric":"every_kind","env":"x"})");
}

TEST(JsonWriter, StringsEscapeAndReplaceLikeNlohmann) {
  std::mt19937 rng(7);
  // Bytes biased towards the interesting ones: controls, quotes, UTF-8 lead
  // and continuation bytes, and the invalid ones.
  const std::string alphabet = std::string("\x00\x01\x08\x09\x0a\x0c\x0d\x1f\"\\/ az\x7f", 15) +
                               "\xc2\xc3\xdf\xe0\xe1\xed\xef\xf0\xf4\xf5\xff\x80\x8f\x90\x9f\xa0\xbf\xc0\xc1";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n) s += alphabet[rng() % alphabet.size()];
    std::string out;
    append_json_string(out, s);
    ASSERT_EQ(out, dumped(Json(s))) << "input bytes: " << Json(std::vector<std::uint8_t>(s.begin(), s.end())).dump();
  }
  for (const char* valid : {"計算する", "Wörker", "emoji \xf0\x9f\x90\x8d", "\xef\xbf\xbd"}) {
    std::string out;
    append_json_string(out, valid);
    EXPECT_EQ(out, dumped(Json(valid)));
  }
}

TEST(JsonWriter, DoublesPrintAsNlohmann) {
  std::mt19937_64 rng(11);
  std::vector<double> values = {
      0.0,      -0.0,   1.0,    0.1, 1e-7, 123456789012345678.0, 1e21, 2.5e-300, 5e-324, 1.7976931348623157e308,
      0.154586, 39.709, 1000.0, 12.0};
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (std::isfinite(d)) values.push_back(d);
    values.push_back(static_cast<double>(rng() % 10'000'000) / 1000.0);  // the *_ms fields
  }
  for (double d : values) {
    std::string out;
    append_json_number(out, d);
    ASSERT_EQ(out, dumped(Json(d))) << d;
  }
  for (double d : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::string out;
    append_json_number(out, d);
    EXPECT_EQ(out, "null");
  }
}

TEST(Record, RejectsAValueItsSchemaDoesNotDeclare) {
  EveryKind s;
  Record r(s);
  EXPECT_THROW(r.set_text(s.count, "12"), std::logic_error);
  EXPECT_THROW(r.set_float(s.count, 1.5), std::logic_error);
  EXPECT_THROW(r.set_null(s.count), std::logic_error);  // not nullable
  EXPECT_THROW(r.set_uint(s.py, 1), std::logic_error);
  EXPECT_THROW(r.add_py_frame({"f", "x.py", 1}), std::logic_error);  // no stack begun
  EXPECT_THROW(r.set_uint(static_cast<FieldId>(s.columns().size()), 1), std::logic_error);
  EXPECT_NO_THROW(r.set_uint(s.delta, 1));                             // any integer kind fits an integer column
  EXPECT_NO_THROW(r.set_text(s.when, "2026-11-29T16:09:55.541716Z"));  // a time read back from text
}

TEST(Record, CopiesOwnTheirText) {
  EveryKind s;
  Record r(s);
  std::string name = "Worker-1";
  r.set_text(thread_fields::thread_name, name);
  r.begin_py_stack(s.py);
  r.add_py_frame({name, "a.py", 3});
  Record copy = r;
  name = "changed";
  r.clear();
  r.set_text(thread_fields::thread_name, "other");
  EXPECT_EQ(copy.text(thread_fields::thread_name), "Worker-1");
  EXPECT_EQ(copy.py_frame(s.py, 0).function, "Worker-1");
  // Copying one field's text into another field of the same record.
  copy.set_text(thread_fields::comm, copy.text(thread_fields::thread_name));
  EXPECT_EQ(copy.text(thread_fields::comm), "Worker-1");
}

}  // namespace
}  // namespace pyebpf::sinks
