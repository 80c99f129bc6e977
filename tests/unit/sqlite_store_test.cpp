// SQLite storage: events come back as they went in (types, fields no schema
// knows, several runs), readers see committed batches while the writer holds
// the file, and a locked file makes the sink queue and then drop, counted.
#include "sinks/sqlite_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "app/registry.hpp"
#include "pyebpf/error.hpp"
#include "sinks/record_input.hpp"
#include "sinks/sqlite_sink.hpp"

namespace pyebpf::sinks {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// An event given as pyebpf prints it, as a record of its metric's schema.
Record rec(const Json& e) {
  Record r(*app::schema_for_metric(e.at("metric").get<std::string>()));
  record_from_json(e, r);
  return r;
}
using namespace std::chrono_literals;

class TempDb : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pyebpf-sqlite-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "run.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

RunInfo run_info() {
  return {"test", "host-a", "0.1.0", "pyebpf -p 1 -e test", {1, 2}, 1795968883529837LL};
}

std::vector<Json> read_all(const std::string& path, long run) {
  SqliteStore store(path, SqliteStore::Mode::Read);
  std::vector<Json> out;
  store.for_each_event(run, [&](const Json& e) { out.push_back(e); });
  return out;
}

TEST_F(TempDb, EventsRoundTripWithTheirTypes) {
  Json py = {{"metric", "py_stack"},
             {"env", "test"},
             {"ts", "2026-11-29T16:14:43.529837Z"},
             {"ts_us", 1795968883529837LL},
             {"pid", 7714},
             {"thread_name", "Wörker"},
             {"stack", "a (x.py:1);b (x.py:2)"},
             {"stack_depth", 2},
             {"truncated", false}};
  Json off = {{"metric", "off_cpu"},
              {"off_cpu_ms", 12.5},
              {"kernel_stack", {"schedule", "futex_wait"}},
              {"count", nullptr}};  // null: stored as NULL, absent on the way back
  Json queue = {{"metric", "request_queue"}, {"queued", 3}, {"handoff_p99_ms", 1.25}};
  {
    SqliteStore store(path_, SqliteStore::Mode::Write);
    long run = store.begin_run(run_info());
    EXPECT_EQ(run, 1);
    store.begin();
    store.insert(run, rec(py));
    store.insert(run, rec(off));
    store.insert(run, rec(queue));
    store.commit();
    store.end_run(run, {1795968893529837LL, 10.0, "duration reached", {"py_stack: 1 samples", "sqlite: 3 events"}});
  }
  auto events = read_all(path_, 1);
  ASSERT_EQ(events.size(), 3u);
  // Tables come back in name order: ebpf_off_cpu, ebpf_py_stacks, ebpf_request_queue.
  Json got_off = events[0], got_py = events[1], got_queue = events[2];
  EXPECT_EQ(got_py, py);
  EXPECT_EQ(got_off["off_cpu_ms"], 12.5);
  EXPECT_EQ(got_off["kernel_stack"], Json::array({"schedule", "futex_wait"}));
  EXPECT_FALSE(got_off.contains("count"));
  EXPECT_EQ(got_queue, queue);

  SqliteStore store(path_, SqliteStore::Mode::Read);
  auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].info.env, "test");
  EXPECT_EQ(runs[0].info.pids, (std::vector<long>{1, 2}));
  EXPECT_TRUE(runs[0].ended);
  EXPECT_EQ(runs[0].end.stop_reason, "duration reached");
  EXPECT_EQ(runs[0].end.summary_lines.size(), 2u);
}

TEST_F(TempDb, RunsAreKeptApart) {
  for (int run = 1; run <= 2; ++run) {
    SqliteStore store(path_, SqliteStore::Mode::Write);
    long id = store.begin_run(run_info());
    EXPECT_EQ(id, run);
    store.begin();
    for (int i = 0; i < run * 10; ++i) store.insert(id, rec({{"metric", "py_stack"}, {"stack", "a (x.py:1)"}}));
    store.commit();
  }
  EXPECT_EQ(read_all(path_, 1).size(), 10u);
  EXPECT_EQ(read_all(path_, 2).size(), 20u);
}

TEST_F(TempDb, ReadableWhileTheSinkWrites) {
  SqliteSink sink(path_, run_info(), 100000);
  for (int i = 0; i < 100; ++i) sink.write(rec({{"metric", "py_stack"}, {"stack", "a (x.py:1)"}, {"stack_depth", i}}));
  sink.flush();
  // Another connection (as sqlite3 or `pyebpf report` would) sees the first
  // commit within the commit interval, while the sink keeps the file open.
  std::size_t seen = 0;
  for (int tries = 0; tries < 50 && seen < 100; ++tries) {
    std::this_thread::sleep_for(100ms);
    seen = read_all(path_, sink.run_id()).size();
  }
  EXPECT_EQ(seen, 100u);
  for (int i = 100; i < 150; ++i)
    sink.write(rec({{"metric", "py_stack"}, {"stack", "a (x.py:1)"}, {"stack_depth", i}}));
  sink.begin_close(SteadyClock::now() + 10s);
  ASSERT_TRUE(sink.wait_closed(SteadyClock::now() + 15s));
  EXPECT_EQ(read_all(path_, sink.run_id()).size(), 150u);
  auto c = sink.counts();
  EXPECT_EQ(c.received, 150u);
  EXPECT_EQ(c.delivered, 150u);
  EXPECT_EQ(c.dropped_full + c.dropped_at_exit, 0u);
}

TEST_F(TempDb, LockedFileQueuesThenDropsAndCountsEverything) {
  { SqliteStore create(path_, SqliteStore::Mode::Write); }
  // Another process-like connection holds the write lock for a while.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::unique_ptr<SqliteSink> sink;
  // begin_run needs the lock too: release it for the constructor, take it back.
  sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  sink = std::make_unique<SqliteSink>(path_, run_info(), /*queue_max=*/50);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  for (int i = 0; i < 80; ++i) {
    sink->write(rec({{"metric", "py_stack"}, {"stack_depth", i}}));
    sink->flush();
  }
  auto c = sink->counts();
  EXPECT_EQ(c.received, 80u);
  EXPECT_EQ(c.dropped_full, 30u);  // 50 held, the rest dropped at once: the writer never blocks the caller
  std::this_thread::sleep_for(300ms);
  sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  sink->begin_close(SteadyClock::now() + 20s);
  ASSERT_TRUE(sink->wait_closed(SteadyClock::now() + 30s));
  c = sink->counts();
  EXPECT_EQ(c.delivered, 50u);
  EXPECT_EQ(c.dropped_at_exit, 0u);
  EXPECT_EQ(read_all(path_, sink->run_id()).size(), 50u);
  EXPECT_NE(sink->summary().find("50 events written"), std::string::npos) << sink->summary();
  EXPECT_NE(sink->summary().find("30 dropped (queue full)"), std::string::npos) << sink->summary();
}

TEST_F(TempDb, TablesOfAnOlderPyebpfGetTheColumnsTheyLack) {
  {
    SqliteStore store(path_, SqliteStore::Mode::Write);  // creates pyebpf_runs
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE ebpf_gil_wait (run_id INTEGER NOT NULL, metric TEXT, duration_ms REAL)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    SqliteStore store(path_, SqliteStore::Mode::Write);
    long run = store.begin_run(run_info());
    store.begin();
    store.insert(run, rec({{"metric", "gil_wait"}, {"duration_ms", 2.5}, {"holder_changes", 3}}));
    store.commit();
  }
  auto events = read_all(path_, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["duration_ms"], 2.5);
  EXPECT_EQ(events[0]["holder_changes"], 3);
}

TEST_F(TempDb, UnwritablePathFailsAtStart) {
  EXPECT_THROW(SqliteSink((dir_ / "no" / "such" / "dir.db").string(), run_info(), 10), Error);
  EXPECT_THROW(SqliteStore((dir_ / "missing.db").string(), SqliteStore::Mode::Read), Error);
}

std::size_t open_fds() {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()));
}

// Found by tests/fuzz/report_sqlite_fuzz: a file refused by the reader stayed
// open (the connection leaked: a throwing constructor runs no destructor).
TEST_F(TempDb, RefusedFilesAreClosed) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE other (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string garbage = (dir_ / "garbage.db").string();
  {
    std::ofstream out(garbage);
    out << std::string(4096, 'x');
  }
  const std::size_t before = open_fds();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(SqliteStore(path_, SqliteStore::Mode::Read), Error) << "no pyebpf_runs table";
    EXPECT_THROW(SqliteStore(garbage, SqliteStore::Mode::Read), Error) << "not a database";
  }
  EXPECT_EQ(open_fds(), before);
}

// A generated column is evaluated on every read (a crafted file had one print
// 900 MB per row): refused before any row is read.
TEST_F(TempDb, ComputedColumnsAreRefused) {
  {
    SqliteStore store(path_, SqliteStore::Mode::Write);
    store.begin_run(run_info());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE ebpf_big (run_id, metric, big AS (printf('%.*c', 1000, 'x')));"
                         "INSERT INTO ebpf_big (run_id, metric) VALUES (1, 'x'), (1, 'y')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    SqliteStore store(path_, SqliteStore::Mode::Read);
    ADD_FAILURE() << "a file with computed columns was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("table ebpf_big has computed columns"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pyebpf::sinks
