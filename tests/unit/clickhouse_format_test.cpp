// ClickHouse DDL per server version, row encoding and error classification.
#include "sinks/clickhouse_format.hpp"

#include <gtest/gtest.h>

#include "app/registry.hpp"
#include "trackers/host_net_health/host_net_health_events.hpp"
#include "trackers/offcpu/offcpu_events.hpp"
#include "trackers/py_stack/py_stack_events.hpp"
#include "util/gzip.hpp"

namespace pyebpf::sinks::clickhouse {
namespace {

using Json = nlohmann::ordered_json;

const TableSchema& table_for(std::string_view metric) {
  return *app::schema_for_metric(metric);
}

const Dialect kLegacy = Dialect::for_version(*ServerVersion::parse("18.16.1"));
const Dialect kModern = Dialect::for_version(*ServerVersion::parse("24.8.4.13\n"));

TEST(ClickHouseVersion, ParsesServerAnswers) {
  auto v = ServerVersion::parse("18.16.1\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 18);
  EXPECT_EQ(v->minor, 16);
  EXPECT_EQ(v->text, "18.16.1");
  EXPECT_FALSE(ServerVersion::parse("Code: 516, bad"));
  EXPECT_FALSE(ServerVersion::parse(""));
  EXPECT_FALSE(kLegacy.datetime64);
  EXPECT_FALSE(kLegacy.low_cardinality);
  EXPECT_TRUE(kModern.datetime64);
  EXPECT_TRUE(kModern.low_cardinality);
  EXPECT_FALSE(Dialect::for_version(*ServerVersion::parse("19.17.6")).datetime64);
  EXPECT_TRUE(Dialect::for_version(*ServerVersion::parse("20.1.2")).datetime64);
}

TEST(ClickHouseDdl, LegacyServersGetPlainTypes) {
  std::string sql = create_table_sql(table_for("py_stack"), "prof", kLegacy);
  EXPECT_EQ(sql.rfind("CREATE TABLE IF NOT EXISTS `prof`.`ebpf_py_stacks` (`env` String, `host` String, "
                      "`ts` DateTime('UTC'), `ts_us` Int64, `pid` UInt32",
                      0),
            0u)
      << sql;
  EXPECT_NE(sql.find("`truncated` UInt8"), std::string::npos);
  EXPECT_NE(sql.find("`extra` String) ENGINE = MergeTree PARTITION BY toYYYYMMDD(ts) ORDER BY (env, host, ts)"),
            std::string::npos);
  EXPECT_EQ(sql.find("LowCardinality"), std::string::npos);
  EXPECT_EQ(sql.find("DateTime64"), std::string::npos);
}

TEST(ClickHouseDdl, CurrentServersGetRicherTypes) {
  std::string sql = create_table_sql(table_for("off_cpu"), "default", kModern);
  EXPECT_NE(sql.find("`ts` DateTime64(6, 'UTC')"), std::string::npos) << sql;
  EXPECT_NE(sql.find("`comm` LowCardinality(String)"), std::string::npos);
  EXPECT_NE(sql.find("`kernel_stack` Array(String)"), std::string::npos);
  EXPECT_NE(sql.find("`count` Nullable(UInt64)"), std::string::npos);
  EXPECT_NE(sql.find("`py_stack` String"), std::string::npos);  // free text stays String
}

TEST(ClickHouseDdl, EveryOriginalTableExists) {
  auto schemas = app::all_schemas();
  for (const char* table : {"ebpf_gc_pause", "ebpf_gil_wait", "ebpf_off_cpu", "ebpf_handoff", "ebpf_py_stacks",
                            "ebpf_tcp_accept", "ebpf_tcp_connect", "ebpf_tcp_loss", "ebpf_host_net_health"}) {
    bool found = false;
    for (const auto* t : schemas) found |= t->table() == table;
    EXPECT_TRUE(found) << table;
  }
  // and handoff's request_queue summaries, gc's gc_stats and gc_cpu, gil's gil_stats, offcpu's off_cpu_blocked
  EXPECT_EQ(schemas.size(), 14u);
  EXPECT_EQ(table_for("request_queue").table(), "ebpf_request_queue");
  EXPECT_EQ(table_for("gc_stats").table(), "ebpf_gc_stats");
  EXPECT_EQ(table_for("gc_cpu").table(), "ebpf_gc_cpu");
  EXPECT_EQ(table_for("gil_stats").table(), "ebpf_gil_stats");
  EXPECT_EQ(table_for("off_cpu_blocked").table(), "ebpf_off_cpu_blocked");
}

TEST(ClickHouseDdl, IdentifiersAreQuoted) {
  EXPECT_EQ(quote_ident("a`b"), "`a\\`b`");
  EXPECT_EQ(add_column_sql("db", "t", "new_field", "UInt32"), "ALTER TABLE `db`.`t` ADD COLUMN `new_field` UInt32");
  EXPECT_EQ(insert_sql("db", "t"), "INSERT INTO `db`.`t` FORMAT JSONEachRow");
}

TEST(ClickHouseTime, ConvertsIsoToServerFormat) {
  EXPECT_EQ(clickhouse_time("2026-11-29T16:14:43.529837Z", true), "2026-11-29 16:14:43.529837");
  EXPECT_EQ(clickhouse_time("2026-11-29T16:14:43.529837Z", false), "2026-11-29 16:14:43");
  EXPECT_EQ(clickhouse_time("2026-11-29 16:14:43.5", true), "2026-11-29 16:14:43.500000");
  EXPECT_EQ(clickhouse_time("2026-11-29T16:14:43Z", true), "2026-11-29 16:14:43.000000");
  EXPECT_EQ(clickhouse_time("2026-11-29T16:14:43+00:00", false), "2026-11-29 16:14:43");
  EXPECT_FALSE(clickhouse_time("2026-11-29T16:14:43+02:00", false));
  EXPECT_FALSE(clickhouse_time("yesterday", false));
  EXPECT_FALSE(clickhouse_time("2026-11-29T16:14:43.Z", false));
}

TEST(ClickHouseRow, TypedValuesInTheServersFormats) {
  const auto& s = trackers::py_stack_schema();
  namespace tf = thread_fields;
  RowEncoder enc(s, kLegacy, "host-a");
  Record r(s);
  r.set_text(tf::env, "prod");
  r.set_time(tf::ts, 1795968883529837LL);
  r.set_int(tf::ts_us, 1795968883529837LL);
  r.set_uint(tf::pid, 7714);
  r.set_uint(tf::container_pid, 1ull << 40);  // out of range for UInt32: extra
  r.set_text(tf::thread_name, "Worker");
  r.begin_py_stack(s.stack);
  r.add_py_frame({"a", "x.py", 1});
  r.add_py_frame({"b", "x.py", 2});
  r.set_uint(s.stack_depth, 2);
  r.set_bool(s.truncated, true);  // bool -> UInt8
  Json row = Json::parse(enc.encode(r));
  EXPECT_FALSE(row.contains("metric"));
  EXPECT_EQ(row["host"], "host-a");
  EXPECT_EQ(row.begin().key(), "env");
  EXPECT_EQ(std::next(row.begin()).key(), "host");  // right after env, as the table declares it
  EXPECT_EQ(row["ts"], "2026-11-29 16:14:43");
  EXPECT_EQ(row["ts_us"], 1795968883529837LL);
  EXPECT_EQ(row["stack"], "a (x.py:1);b (x.py:2)");
  EXPECT_EQ(row["stack_depth"], 2);
  EXPECT_EQ(row["truncated"], 1);
  EXPECT_FALSE(row.contains("partial"));  // absent: the column's default
  EXPECT_FALSE(row.contains("container_pid"));
  Json extra = Json::parse(row["extra"].get<std::string>());
  EXPECT_EQ(extra, Json({{"container_pid", 1ull << 40}}));

  // A time read back from text, in the modern format.
  RowEncoder modern(s, kModern, "h");
  Record t(s);
  t.set_text(tf::ts, "2026-11-29T16:14:43.000001Z");
  EXPECT_EQ(Json::parse(modern.encode(t))["ts"], "2026-11-29 16:14:43.000001");
}

TEST(ClickHouseRow, StacksNullsAndJsonOfOtherTrackers) {
  const auto& off = trackers::off_cpu_schema();
  RowEncoder enc(off, kModern, "h");
  Record r(off);
  r.set_float(off.off_cpu_ms, 12);
  r.begin_native_stack(off.kernel_stack);
  r.add_native_frame({stack::NativeFrame::Kind::Symbol, "schedule", ""});
  r.add_native_frame({stack::NativeFrame::Kind::Address, "", "", 0xffffffffc0f00000});
  r.set_null(off.count);
  Json row = Json::parse(enc.encode(r));
  EXPECT_EQ(row["off_cpu_ms"], 12.0);
  EXPECT_EQ(row["kernel_stack"], Json::array({"schedule", "[unknown] [0xffffffffc0f00000]"}));
  EXPECT_TRUE(row["count"].is_null());  // Nullable column keeps the null
  EXPECT_FALSE(row.contains("extra"));

  const auto& hnh = trackers::host_net_health_schema();
  RowEncoder h(hnh, kLegacy, "h");
  Record e(hnh);
  e.set_json(hnh.time_wait_top_dst, Json::array({Json{{"dst", "10.0.0.1:5432"}, {"count", 3}}}));
  e.set_json(hnh.fd_usage, Json::array());
  e.set_int(hnh.total_pps, -1);
  e.set_texts(hnh.warnings, {"close_wait=150"});
  Json hrow = Json::parse(h.encode(e));
  EXPECT_EQ(hrow["time_wait_top_dst"], R"([{"dst":"10.0.0.1:5432","count":3}])");
  EXPECT_EQ(hrow["fd_usage"], "[]");
  EXPECT_EQ(hrow["total_pps"], -1);
  EXPECT_EQ(hrow["warnings"], Json::array({"close_wait=150"}));
  EXPECT_FALSE(hrow.contains("extra"));
}

TEST(ClickHouseErrors, ClassifiedByExceptionCode) {
  // Bodies as ClickHouse 18.16 sends them (status codes vary by version).
  EXPECT_EQ(classify(500, "Code: 27, e.displayText() = DB::Exception: Cannot parse input"), Failure::Data);
  EXPECT_EQ(classify(400, "Code: 26, e.displayText() = DB::Exception: Cannot parse JSON string"), Failure::Data);
  EXPECT_EQ(classify(500, "Code: 49, e.displayText() = DB::Exception: Unknown element 'b' for type Enum8"),
            Failure::Data);
  EXPECT_EQ(classify(404, "Code: 60, e.displayText() = DB::Exception: Table default.x doesn't exist."),
            Failure::MissingTable);
  EXPECT_EQ(classify(401, "Code: 193, e.displayText() = DB::Exception: Wrong password for user x"), Failure::Transient);
  EXPECT_EQ(classify(500, "Code: 252, DB::Exception: Too many parts"), Failure::Transient);
  EXPECT_EQ(classify(0, ""), Failure::Transient);
  EXPECT_EQ(classify(503, "Service Unavailable"), Failure::Transient);
  EXPECT_EQ(classify(500, "Code: 1000, something else"), Failure::Unknown);
  EXPECT_EQ(exception_code("nothing"), -1);
}

TEST(Gzip, RoundTrips) {
  std::string rows;
  for (int i = 0; i < 1000; ++i)
    rows += R"J({"metric":"py_stack","stack":"a (x.py:1);b (x.py:2)"})J"
            "\n";
  std::string packed = gzip_compress(rows);
  EXPECT_LT(packed.size(), rows.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  EXPECT_EQ(gzip_decompress(packed), rows);
}

}  // namespace
}  // namespace pyebpf::sinks::clickhouse
