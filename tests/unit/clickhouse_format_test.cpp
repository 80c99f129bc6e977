// ClickHouse DDL per server version, row encoding and error classification.
#include "sinks/clickhouse_format.hpp"

#include <gtest/gtest.h>

#include "util/gzip.hpp"

namespace pyebpf::sinks::clickhouse {
namespace {

using Json = Event;

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
  for (const char* table : {"ebpf_gc_pause", "ebpf_gil_wait", "ebpf_off_cpu", "ebpf_handoff", "ebpf_py_stacks",
                            "ebpf_tcp_accept", "ebpf_tcp_connect", "ebpf_tcp_loss", "ebpf_host_net_health"}) {
    bool found = false;
    for (const auto& t : known_tables()) found |= t.table == table;
    EXPECT_TRUE(found) << table;
  }
  EXPECT_EQ(known_tables().size(), 10u);  // and handoff's request_queue summaries
  EXPECT_EQ(table_for("request_queue").table, "ebpf_request_queue");
  // Metrics without a schema get their own table, never a known one.
  EXPECT_EQ(table_for("queue_depth").table, "ebpf_queue_depth");
  EXPECT_FALSE(table_for("queue_depth").known);
  EXPECT_EQ(table_for("py_stacks").table, "ebpf_py_stacks_other");
  EXPECT_EQ(table_for("Weird Name!").table, "ebpf_weird_name_");
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

TEST(ClickHouseRow, FieldsAreCoercedOrKeptInExtra) {
  RowEncoder enc(table_for("py_stack"), kLegacy, "host-a");
  Json e = {{"metric", "py_stack"},
            {"env", "prod"},
            {"ts", "2026-11-29T16:14:43.529837Z"},
            {"ts_us", 1795968883529837LL},
            {"pid", 7714},
            {"tid", 7718},
            {"thread_name", "Worker"},
            {"stack", "a (x.py:1);b (x.py:2)"},
            {"stack_depth", 2.0},       // a whole float fits UInt16
            {"leaf_line", "12"},        // a string does not fit Int32: kept in extra
            {"truncated", true},        // bool -> UInt8
            {"new_field", {{"k", 1}}},  // unknown field: extra
            {"container_pid", -1},      // out of range for UInt32: extra
            {"partial", nullptr}};      // null in a non-Nullable column: omitted
  Json row = Json::parse(enc.encode(e));
  EXPECT_FALSE(row.contains("metric"));
  EXPECT_EQ(row["host"], "host-a");
  EXPECT_EQ(row["ts"], "2026-11-29 16:14:43");
  EXPECT_EQ(row["ts_us"], 1795968883529837LL);
  EXPECT_EQ(row["stack_depth"], 2);
  EXPECT_EQ(row["truncated"], 1);
  EXPECT_FALSE(row.contains("leaf_line"));
  EXPECT_FALSE(row.contains("container_pid"));
  EXPECT_FALSE(row.contains("partial"));
  Json extra = Json::parse(row["extra"].get<std::string>());
  EXPECT_EQ(extra["leaf_line"], "12");
  EXPECT_EQ(extra["new_field"]["k"], 1);
  EXPECT_EQ(extra["container_pid"], -1);
  EXPECT_EQ(extra.size(), 3u);
}

TEST(ClickHouseRow, TypesOfOtherTrackers) {
  RowEncoder enc(table_for("off_cpu"), kModern, "h");
  Json e = {{"metric", "off_cpu"}, {"ts", "2026-11-29T16:14:43.000001Z"},
            {"off_cpu_ms", 12},    {"kernel_stack", {"schedule", "futex_wait", 7}},
            {"count", nullptr},    {"srtt_us", 12.6}};
  Json row = Json::parse(enc.encode(e));
  EXPECT_EQ(row["ts"], "2026-11-29 16:14:43.000001");
  EXPECT_EQ(row["off_cpu_ms"], 12);
  EXPECT_EQ(row["kernel_stack"], Json::array({"schedule", "futex_wait", "7"}));
  EXPECT_TRUE(row["count"].is_null());  // Nullable column keeps the null
  EXPECT_EQ(Json::parse(row["extra"].get<std::string>())["srtt_us"], 12.6);

  RowEncoder hnh(table_for("host_net_health"), kLegacy, "h");
  Json h = {{"metric", "host_net_health"},
            {"time_wait_top_dst", Json::array({{{"dst", "10.0.0.1:5432"}, {"count", 3}}})},
            {"fd_usage", Json::array()},
            {"total_pps", -1}};
  Json hrow = Json::parse(hnh.encode(h));
  EXPECT_EQ(hrow["time_wait_top_dst"], R"([{"dst":"10.0.0.1:5432","count":3}])");
  EXPECT_EQ(hrow["fd_usage"], "[]");
  EXPECT_EQ(hrow["total_pps"], -1);
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
