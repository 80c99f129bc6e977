// SPDX-License-Identifier: Apache-2.0
// Where events go, end to end: real pyebpf runs on real workloads, with
// SQLite files, flame-graph files (checked in the real speedscope viewer) and
// a real ClickHouse server (Debian's 18.16, started by the test). What lands
// must equal the JSON lines pyebpf printed at the same time (--also-stdout).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "app/registry.hpp"
#include "clickhouse_server.hpp"
#include "harness.hpp"
#include "sinks/clickhouse_sink.hpp"
#include "sinks/flame_graph_sink.hpp"
#include "sinks/record_input.hpp"

namespace pyebpf::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A py_stack event or row, as something to compare multisets of.
using Key = std::tuple<long, long long, std::string>;  // tid, ts_us, stack

std::multiset<Key> keys_of(const std::vector<Json>& events) {
  std::multiset<Key> out;
  for (const auto& e : events) out.emplace(e.at("tid").get<long>(), e.at("ts_us").get<long long>(), e.at("stack"));
  return out;
}

// Stored rows equal printed events. On a mismatch, says how many and which
// rows differ (the first few on each side), not two walls of thousands of rows.
void expect_same_rows(const std::multiset<Key>& stored, const std::multiset<Key>& printed) {
  if (stored == printed) return;
  std::vector<Key> only_stored, only_printed;
  std::set_difference(stored.begin(), stored.end(), printed.begin(), printed.end(), std::back_inserter(only_stored));
  std::set_difference(printed.begin(), printed.end(), stored.begin(), stored.end(), std::back_inserter(only_printed));
  auto first = [](const std::vector<Key>& keys) {
    std::string out;
    for (std::size_t i = 0; i < keys.size() && i < 3; ++i)
      out += fmt::format("\n    tid {} ts_us {} stack {}", std::get<0>(keys[i]), std::get<1>(keys[i]),
                         std::get<2>(keys[i]));
    return out;
  };
  ADD_FAILURE() << stored.size() << " rows stored, " << printed.size() << " events printed; " << only_stored.size()
                << " only stored:" << first(only_stored) << "\n  " << only_printed.size()
                << " only printed:" << first(only_printed);
}

std::string tail_from(const std::string& text, const std::string& marker) {
  auto pos = text.find(marker);
  return pos == std::string::npos ? std::string() : text.substr(pos);
}

// The number before `label` in a summary line ("12 rows inserted" -> 12).
long long number_before(const std::string& text, const std::string& label) {
  std::smatch m;
  std::regex re("(\\d+) " + label);
  if (!std::regex_search(text, m, re)) return -1;
  return std::stoll(m[1].str());
}

std::multiset<Key> sqlite_keys(const std::string& path) {
  std::multiset<Key> out;
  for (const auto& r : sqlite_rows(path, "SELECT tid, ts_us, stack FROM ebpf_py_stacks")) {
    out.emplace(std::stol(r[0]), std::stoll(r[1]), r[2]);
  }
  return out;
}

// Runs the viewer check (tests/viewer): schema + real speedscope in headless Chromium.
RunResult check_in_speedscope(const std::string& profile, const std::string& screenshot) {
  std::string dir = std::string(PYEBPF_SOURCE_DIR) + "/tests/viewer";
  if (!fs::exists(dir + "/node_modules/speedscope"))
    ADD_FAILURE() << "the viewer is not installed: tools/test runs `npm ci --prefix tests/viewer`";
  return run_program({"node", dir + "/check_speedscope.mjs", profile, screenshot}, 120s);
}

std::vector<std::string> base_args(pid_t pid) {
  return {"-p", std::to_string(pid), "-e", "e2e", "--enable", "py_stack"};
}

// ---------------------------------------------------------------------------
// SQLite, flame graphs, report

TEST(SinksE2E, SqliteRowsFoldedAndSpeedscopeEqualStdoutAndStoredReportEqualsLive) {
  TempDir tmp;
  const std::string db = tmp / "run.db", folded = tmp / "cpu.folded", ss = tmp / "profile.speedscope.json";
  Workload workload(python_3_11(), "named_threads.py", {"3", "Alpha", "Beta"});
  Pyebpf pyebpf(base_args(workload.pid()) + std::vector<std::string>{"--pystack-frequency", "199", "--sqlite", db,
                                                                     "--folded", folded, "--speedscope", ss,
                                                                     "--also-stdout"});
  pyebpf.wait_ready();
  workload.go();
  Json truth = workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  auto events = pyebpf.events("py_stack");
  ASSERT_GT(events.size(), 200u) << pyebpf.stderr_text();

  // SQLite: the same events, one row each.
  expect_same_rows(sqlite_keys(db), keys_of(events));
  std::set<std::string> printed_names;
  for (const auto& e : events) printed_names.insert(e.at("thread_name"));
  EXPECT_TRUE(printed_names.count("Alpha") && printed_names.count("Beta"));
  std::set<std::string> stored_names;
  for (const auto& r : sqlite_rows(db, "SELECT DISTINCT thread_name FROM ebpf_py_stacks")) stored_names.insert(r[0]);
  EXPECT_EQ(stored_names, printed_names);

  // `pyebpf report FILE` prints what pyebpf printed at the end of the run.
  const std::string live = tail_from(pyebpf.stderr_text(), "pyebpf: ran ");
  RunResult stored = run_pyebpf({"report", db});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_EQ(tail_from(stored.out, "pyebpf: ran "), live);
  EXPECT_NE(live.find("[py_stack: " + std::to_string(events.size()) + " samples, " +
                      std::to_string(printed_names.size()) + " threads]"),
            std::string::npos)
      << live;
  EXPECT_NE(live.find("sqlite: " + std::to_string(events.size()) + " events written"), std::string::npos) << live;

  // Folded: every distinct stack with its number of samples, root first.
  std::map<std::string, long> expected, got;
  for (const auto& e : events) {
    std::string stack = e.at("stack");
    ++expected[stack.empty() ? sinks::kNoPythonFramesLabel : stack];
  }
  for (const auto& line : split(slurp(folded), '\n')) {
    auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    got[line.substr(0, space)] += std::stol(line.substr(space + 1));
  }
  EXPECT_EQ(got, expected);
  for (const auto& [stack, n] : got) {
    if (stack != sinks::kNoPythonFramesLabel) {
      // Worker threads start in Thread._bootstrap; the main thread, sampled
      // while it wakes in join(), starts in the script's <module>.
      EXPECT_TRUE(stack.rfind("Thread._bootstrap (", 0) == 0 || stack.rfind("<module> (", 0) == 0)
          << "root first: " << stack;
    }
  }

  // speedscope: a CPU profile per thread, weights = samples / frequency.
  auto doc = nlohmann::json::parse(slurp(ss));
  std::map<std::string, double> ms_by_thread;
  for (const auto& p : doc.at("profiles")) ms_by_thread[p.at("name")] = p.at("endValue").get<double>();
  std::map<long, std::size_t> samples_by_tid;
  for (const auto& e : events) ++samples_by_tid[e.at("tid").get<long>()];
  ASSERT_EQ(ms_by_thread.size(), samples_by_tid.size());
  for (const auto& [name, tid] : truth.at("threads").items()) {
    std::string profile =
        name + " (pid " + std::to_string(workload.pid()) + " tid " + std::to_string(tid.get<long>()) + ") · CPU";
    ASSERT_TRUE(ms_by_thread.count(profile)) << profile;
    EXPECT_NEAR(ms_by_thread[profile], samples_by_tid[tid.get<long>()] * 1000.0 / 199, 1e-6) << profile;
  }
  RunResult viewer = check_in_speedscope(ss, tmp / "speedscope.png");
  EXPECT_EQ(viewer.status, 0) << viewer.out << viewer.err;
  EXPECT_NE(viewer.out.find("\"schema_ok\":true"), std::string::npos) << viewer.out;
  EXPECT_NE(viewer.out.find("\"viewer_ok\":true"), std::string::npos) << viewer.out;
}

TEST(SinksE2E, SqliteFileIsReadableWhilePyebpfWrites) {
  TempDir tmp;
  const std::string db = tmp / "live.db";
  Workload workload(python_3_11(), "named_threads.py", {"5", "Writer"});
  Pyebpf pyebpf(base_args(workload.pid()) + std::vector<std::string>{"--sqlite", db, "--also-stdout"});
  pyebpf.wait_ready();
  workload.go();
  std::this_thread::sleep_for(2500ms);
  // Another reader, while pyebpf holds the file: committed batches are there.
  auto early = sqlite_rows(db, "SELECT count(*) FROM ebpf_py_stacks");
  ASSERT_EQ(early.size(), 1u);
  long first = std::stol(early[0][0]);
  EXPECT_GT(first, 0);
  RunResult during = run_pyebpf({"report", db});
  EXPECT_EQ(during.status, 0) << during.err;
  EXPECT_NE(during.out.find("this run has not ended"), std::string::npos) << during.out;
  EXPECT_NE(during.out.find("[py_stack: "), std::string::npos) << during.out;
  std::this_thread::sleep_for(1500ms);
  long later = std::stol(sqlite_rows(db, "SELECT count(*) FROM ebpf_py_stacks")[0][0]);
  EXPECT_GT(later, first);
  workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  expect_same_rows(sqlite_keys(db), keys_of(pyebpf.events("py_stack")));
}

TEST(SinksE2E, SpeedscopeCheckFailsOnABrokenProfile) {
  // The viewer check must be able to fail: a schema-valid file whose sample
  // points at a frame that does not exist breaks the real viewer.
  TempDir tmp;
  std::ofstream(tmp / "broken.json")
      << R"({"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]},)"
      << R"("profiles":[{"type":"sampled","name":"x","unit":"none","startValue":0,"endValue":1,"samples":[[5]],"weights":[1]}]})";
  RunResult r = check_in_speedscope(tmp / "broken.json", tmp / "broken.png");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"viewer_ok\":false"), std::string::npos) << r.out;
  std::ofstream(tmp / "invalid.json") << R"({"profiles":[]})";
  r = check_in_speedscope(tmp / "invalid.json", tmp / "invalid.png");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"schema_ok\":false"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------
// ClickHouse

class ClickHouseE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ClickHouseServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_->running()) server_->start();
    // One database per test, so tests never see each other's rows.
    db_ = std::string("e2e_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    server_->query("DROP DATABASE IF EXISTS " + db_);
    server_->query("CREATE DATABASE " + db_);
  }
  std::vector<std::string> ch_args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a{
        "--clickhouse-url", server_->url(), "--clickhouse-database", db_, "--ch-flush-interval", "1", "--also-stdout"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::multiset<Key> clickhouse_keys() const {
    std::multiset<Key> out;
    for (const auto& line :
         split(server_->query("SELECT tid, ts_us, stack FROM " + db_ + ".ebpf_py_stacks FORMAT TabSeparated"), '\n')) {
      auto f = split(line, '\t');
      // A sample without Python frames ends in the tab before its empty
      // stack, which split() does not return as a field.
      if (f.size() == 2 && line.back() == '\t') f.emplace_back();
      if (f.size() == 3) out.emplace(std::stol(f[0]), std::stoll(f[1]), f[2]);
    }
    return out;
  }
  static ClickHouseServer* server_;
  std::string db_;
};

ClickHouseServer* ClickHouseE2E::server_ = nullptr;

TEST_F(ClickHouseE2E, RowsEqualStdoutForAPasswordProtectedUser) {
  ScopedEnv password("PYEBPF_CLICKHOUSE_PASSWORD", ClickHouseServer::kPassword);
  Workload workload(python_3_11(), "named_threads.py", {"3", "Alpha", "Beta"});
  Pyebpf pyebpf(base_args(workload.pid()) + ch_args({"--clickhouse-user", ClickHouseServer::kUser}));
  pyebpf.wait_ready();
  workload.go();
  workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  auto events = pyebpf.events("py_stack");
  ASSERT_GT(events.size(), 100u);
  expect_same_rows(clickhouse_keys(), keys_of(events));
  // Every table of the original tool exists, with the server's types, and
  // those pyebpf added (stats, request_queue, off_cpu_blocked).
  auto tables = split(server_->query("SHOW TABLES FROM " + db_), '\n');
  EXPECT_EQ(tables, (std::vector<std::string>{"ebpf_gc_cpu", "ebpf_gc_pause", "ebpf_gc_stats", "ebpf_gil_stats",
                                              "ebpf_gil_wait", "ebpf_handoff", "ebpf_host_net_health", "ebpf_off_cpu",
                                              "ebpf_off_cpu_blocked", "ebpf_py_stacks", "ebpf_request_queue",
                                              "ebpf_tcp_accept", "ebpf_tcp_connect", "ebpf_tcp_loss"}));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(server_->query("SELECT DISTINCT host FROM " + db_ + ".ebpf_py_stacks"), std::string(host) + "\n");
  std::string names;
  for (const auto& n : [&] {
         std::set<std::string> s;
         for (const auto& e : events) s.insert(e.at("thread_name"));
         return s;
       }())
    names += n + "\n";
  EXPECT_NE(names.find("Alpha\nBeta\n"), std::string::npos) << names;
  EXPECT_EQ(server_->query("SELECT DISTINCT thread_name FROM " + db_ + ".ebpf_py_stacks ORDER BY thread_name"), names);
  // The time column holds the event's time (to the second on 18.16; ts_us has the µs).
  EXPECT_EQ(server_->count(db_ + ".ebpf_py_stacks WHERE toInt64(toUInt32(ts)) != intDiv(ts_us, 1000000)"), 0);
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(number_before(err, "rows inserted"), static_cast<long long>(events.size())) << err;
  EXPECT_EQ(err.find(ClickHouseServer::kPassword), std::string::npos) << "the password was printed";
}

TEST_F(ClickHouseE2E, WrongPasswordFailsAtStartWithoutShowingIt) {
  Workload workload(python_3_11(), "named_threads.py", {"1", "Alpha"});
  ScopedEnv password("PYEBPF_CLICKHOUSE_PASSWORD", "not-the-password");
  RunResult r = run_pyebpf(base_args(workload.pid()) + ch_args({"--clickhouse-user", ClickHouseServer::kUser}));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("refused user 'pyebpf_writer'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("PYEBPF_CLICKHOUSE_PASSWORD"), std::string::npos) << r.err;  // the hint
  EXPECT_EQ(r.err.find("not-the-password"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(ClickHouseE2E, ServerStoppedMidRunEventsLandWhenItReturns) {
  Workload workload(python_3_11(), "named_threads.py", {"9", "Alpha"});
  // The password given as a flag this time: it must not stay visible to ps.
  Pyebpf pyebpf(base_args(workload.pid()) + ch_args({"--clickhouse-user", ClickHouseServer::kUser,
                                                     "--clickhouse-password", ClickHouseServer::kPassword}));
  pyebpf.wait_ready();
  std::string cmdline = slurp("/proc/" + std::to_string(pyebpf.child().pid()) + "/cmdline");
  EXPECT_EQ(cmdline.find(ClickHouseServer::kPassword), std::string::npos) << "password readable in /proc/PID/cmdline";
  EXPECT_NE(cmdline.find("--clickhouse-password"), std::string::npos);
  workload.go();
  std::this_thread::sleep_for(2s);
  server_->crash();
  ASSERT_TRUE(pyebpf.child().wait_for_stderr("retrying with backoff", 20s)) << pyebpf.stderr_text();
  std::this_thread::sleep_for(2s);
  server_->start();
  workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  auto events = pyebpf.events("py_stack");
  ASSERT_GT(events.size(), 200u);
  expect_same_rows(clickhouse_keys(), keys_of(events));
  const std::string err = pyebpf.stderr_text();
  EXPECT_GT(number_before(err, "retries"), 0) << err;
  EXPECT_EQ(number_before(err, "dropped \\(queue full"), 0) << err;
  EXPECT_EQ(number_before(err, "not delivered at exit"), 0) << err;
}

TEST_F(ClickHouseE2E, QueueFullWhileServerIsDownCountsEveryDrop) {
  Workload workload(python_3_11(), "named_threads.py", {"6", "Alpha", "Beta"});
  Pyebpf pyebpf(base_args(workload.pid()) + ch_args({"--ch-queue-max", "40"}));
  pyebpf.wait_ready();
  server_->crash();
  workload.go();
  ASSERT_TRUE(pyebpf.child().wait_for_stderr("dropping new events", 20s)) << pyebpf.stderr_text();
  server_->start();
  workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  auto events = pyebpf.events("py_stack");
  const std::string err = pyebpf.stderr_text();
  long long inserted = number_before(err, "rows inserted");
  long long dropped = number_before(err, "dropped \\(queue full at 40\\)");
  long long at_exit = number_before(err, "not delivered at exit");
  EXPECT_GT(dropped, 0) << err;
  EXPECT_EQ(inserted + dropped + at_exit, static_cast<long long>(events.size())) << err;
  auto rows = clickhouse_keys();
  EXPECT_EQ(static_cast<long long>(rows.size()), inserted);
  auto all = keys_of(events);
  for (const auto& k : rows) EXPECT_TRUE(all.count(k)) << "a row that was never printed: " << std::get<2>(k);
}

TEST_F(ClickHouseE2E, BadRowsAreRejectedAloneAndTheGoodOnesLand) {
  // A table made by someone else, where only some thread names are valid: rows
  // of the other threads fail on the server as data errors. pyebpf adds the
  // columns it lacks.
  server_->query("CREATE TABLE " + db_ +
                 ".ebpf_py_stacks (env String, host String, ts DateTime('UTC'), ts_us Int64, tid UInt32, "
                 "thread_name Enum8('Good-1' = 1, 'Good-2' = 2)) ENGINE = MergeTree ORDER BY ts");
  Workload workload(python_3_11(), "named_threads.py", {"3", "Good-1", "Bad-1", "Good-2"});
  // Every bad row costs about log2(batch) inserts to isolate: on a loaded
  // 2-core machine that can outlast the default 10 s flush at exit.
  Pyebpf pyebpf(base_args(workload.pid()) + ch_args({"--pystack-frequency", "199", "--flush-timeout", "120"}));
  pyebpf.wait_ready();
  workload.go();
  workload.result();
  pyebpf.child().signal(SIGINT);
  pyebpf.wait_exit(150s);
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  std::vector<Json> good, bad;
  for (const auto& e : pyebpf.events("py_stack")) {
    bool valid = e.at("thread_name") == "Good-1" || e.at("thread_name") == "Good-2";
    (valid ? good : bad).push_back(e);
  }
  // Enough of both for the bad rows to sit inside batches of good ones.
  ASSERT_GT(good.size(), 50u);
  ASSERT_GT(bad.size(), 10u);
  expect_same_rows(clickhouse_keys(), keys_of(good));
  const std::string err = pyebpf.stderr_text();
  EXPECT_EQ(number_before(err, "rows inserted"), static_cast<long long>(good.size())) << err;
  EXPECT_EQ(number_before(err, "rejected as bad data"), static_cast<long long>(bad.size())) << err;
  EXPECT_NE(err.find("rejected a row"), std::string::npos) << err;
  EXPECT_NE(err.find("Bad-1"), std::string::npos) << "the log names the bad row";
}

// An event as pyebpf prints it, as the record its tracker would write.
sinks::Record record_of(const nlohmann::ordered_json& e) {
  sinks::Record r(*app::schema_for_metric(e.at("metric").get<std::string>()));
  sinks::record_from_json(e, r);
  return r;
}

// The sink alone, with one event of every tracker as its issue defines it.
TEST_F(ClickHouseE2E, EveryTrackersEventLandsInItsTable) {
  using Event = nlohmann::ordered_json;
  const std::string ts = "2026-11-29T16:14:43.529837Z";
  auto common = [&](const char* metric) {
    return Event{{"metric", metric},   {"env", "e2e"},
                 {"ts", ts},           {"ts_us", 1795968883529837LL},
                 {"pid", 42},          {"tid", 43},
                 {"container_pid", 2}, {"container_tid", 3},
                 {"comm", "python3"},  {"thread_name", "MainThread"}};
  };
  std::vector<Event> events;
  Event e = common("gc_pause");
  e.update({{"start_time", ts},
            {"end_time", "2026-11-29T16:14:43.532837Z"},
            {"duration_ms", 3.0},
            {"generation", 2},
            {"collected", 10},
            {"uncollectable", 0},
            {"py_stack", "a (x.py:1)"},
            {"py_stack_depth", 1}});
  events.push_back(e);
  e = common("gil_wait");
  e.update({{"duration_ms", 1.5},
            {"holder_tid", 44},
            {"holder_container_tid", 4},
            {"holder_thread_name", "Hog"},
            {"waiter_py_stack", "w (x.py:2)"},
            {"waiter_py_stack_depth", 1},
            {"holder_py_stack", "h (x.py:3)"},
            {"holder_py_stack_depth", 1}});
  events.push_back(e);
  e = common("off_cpu");
  e.update({{"cpu", 1},
            {"off_cpu_ms", 25.0},
            {"runq_ms", 0.1},
            {"prev_state", "S"},
            {"kernel_stack", {"entry_SYSCALL_64", "schedule"}},
            {"user_stack", {"read [libc.so.6]"}},
            {"py_stack", "r (x.py:4)"},
            {"py_stack_depth", 1}});
  events.push_back(e);
  e = common("handoff");
  e.update({{"duration_ms", 2.0},
            {"worker_tid", 45},
            {"worker_comm", "gunicorn"},
            {"worker_thread_name", "T-1"},
            {"main_tid", 42},
            {"main_comm", "gunicorn"},
            {"main_thread_name", "MainThread"},
            {"worker_container_tid", 5},
            {"main_container_tid", 2},
            {"fd", 9},
            {"queue_path", "accept"},
            {"pickup_via", "recvfrom"},
            {"queued_time", ts},
            {"pickup_time", ts},
            {"handoff_ms", 2.0}});
  events.push_back(e);
  e = common("py_stack");
  e.update({{"stack", "a (x.py:1)"},
            {"stack_depth", 1},
            {"leaf_func", "a"},
            {"leaf_file", "x.py"},
            {"leaf_line", 1},
            {"truncated", false}});
  events.push_back(e);
  e = common("tcp_connect");
  e.update({{"family", "AF_INET6"},
            {"src_ip", "::1"},
            {"src_port", 40000},
            {"dst_ip", "::1"},
            {"dst_port", 5432},
            {"handshake_us", 120},
            {"srtt_us", 60},
            {"outcome", "success"}});
  events.push_back(e);
  e = common("tcp_accept");
  e.update({{"family", "AF_INET"},
            {"peer_ip", "127.0.0.1"},
            {"peer_port", 40001},
            {"local_ip", "127.0.0.1"},
            {"local_port", 8000},
            {"syn_queue_len", 0},
            {"accept_queue_len", 3},
            {"accept_queue_max", 128},
            {"accept_dwell_us", 2500},
            {"handshake_rtt_us", 40}});
  events.push_back(e);
  events.push_back({{"metric", "tcp_loss"},
                    {"env", "e2e"},
                    {"ts", ts},
                    {"ts_us", 1},
                    {"event", "retransmit"},
                    {"family", "AF_INET"},
                    {"src_ip", "10.0.0.1"},
                    {"src_port", 1},
                    {"dst_ip", "10.0.0.2"},
                    {"dst_port", 443},
                    {"tcp_state", "ESTABLISHED"},
                    {"srtt_us", 900},
                    {"snd_cwnd", 10},
                    {"total_retrans", 1},
                    {"lost_out", 0},
                    {"snd_wnd", 65535},
                    {"rcv_wnd", 65535}});
  events.push_back({{"metric", "host_net_health"},
                    {"env", "e2e"},
                    {"ts", ts},
                    {"ts_us", 1},
                    {"interface", "eth0"},
                    {"interval_s", 30},
                    {"close_wait", 150},
                    {"port_util_pct", 12.5},
                    {"total_pps", -1},
                    {"time_wait_top_dst", {{{"dst", "10.0.0.2:5432"}, {"count", 3}}}},
                    {"fd_usage", Event::array()},
                    {"warnings", {"close_wait=150 (possible fd leak)"}},
                    {"syn_sent", 5000000000LL}});  // beyond its UInt32 column: kept in extra
  events.push_back(
      {{"metric", "request_queue"}, {"env", "e2e"}, {"ts", ts}, {"ts_us", 1}, {"queued", 4}, {"handoff_p99_ms", 12.5}});

  {
    sinks::ClickHouseSink sink({server_->url(), "default", "", db_, 5000, 30, 1000}, "host-x", app::all_schemas());
    for (const auto& ev : events) sink.write(record_of(ev));
    sink.flush();
    sink.begin_close(sinks::SteadyClock::now() + 20s);
    ASSERT_TRUE(sink.wait_closed(sinks::SteadyClock::now() + 30s));
    EXPECT_EQ(sink.counts().delivered, events.size()) << sink.summary();
  }
  auto one = [&](const std::string& sql) { return server_->query(sql + " FORMAT TabSeparated"); };
  EXPECT_EQ(one("SELECT generation, collected, duration_ms, end_time FROM " + db_ + ".ebpf_gc_pause"),
            "2\t10\t3\t2026-11-29 16:14:43\n");
  EXPECT_EQ(one("SELECT holder_thread_name, holder_py_stack FROM " + db_ + ".ebpf_gil_wait"), "Hog\th (x.py:3)\n");
  EXPECT_EQ(one("SELECT kernel_stack, off_cpu_ms FROM " + db_ + ".ebpf_off_cpu"),
            "['entry_SYSCALL_64','schedule']\t25\n");
  EXPECT_EQ(one("SELECT queue_path, fd, handoff_ms FROM " + db_ + ".ebpf_handoff"), "accept\t9\t2\n");
  EXPECT_EQ(one("SELECT leaf_func, truncated, host FROM " + db_ + ".ebpf_py_stacks"), "a\t0\thost-x\n");
  EXPECT_EQ(one("SELECT dst_ip, dst_port, outcome FROM " + db_ + ".ebpf_tcp_connect"), "::1\t5432\tsuccess\n");
  EXPECT_EQ(one("SELECT accept_dwell_us, accept_queue_len FROM " + db_ + ".ebpf_tcp_accept"), "2500\t3\n");
  EXPECT_EQ(one("SELECT event, dst_port, tcp_state FROM " + db_ + ".ebpf_tcp_loss"), "retransmit\t443\tESTABLISHED\n");
  EXPECT_EQ(
      one("SELECT close_wait, total_pps, time_wait_top_dst, warnings, extra FROM " + db_ + ".ebpf_host_net_health"),
      "150\t-1\t[{\"dst\":\"10.0.0.2:5432\",\"count\":3}]\t['close_wait=150 (possible fd leak)']\t"
      "{\"syn_sent\":5000000000}\n");
  EXPECT_EQ(one("SELECT queued, handoff_p99_ms FROM " + db_ + ".ebpf_request_queue"), "4\t12.5\n");
}

TEST_F(ClickHouseE2E, OneBadRowInABatchOfThousandsCostsOnlyThatRow) {
  server_->query("CREATE TABLE " + db_ +
                 ".ebpf_tcp_loss (env String, host String, ts DateTime('UTC'), ts_us Int64, "
                 "event Enum8('retransmit' = 1, 'recv_rst' = 2), extra String) ENGINE = MergeTree ORDER BY ts");
  std::set<int> bad = {0, 777, 1500, 2999};
  sinks::ClickHouseSink sink({server_->url(), "default", "", db_, 5000, 30, 10000}, "host-x", app::all_schemas());
  for (int i = 0; i < 3000; ++i) {
    sink.write(record_of({{"metric", "tcp_loss"},
                          {"env", "e2e"},
                          {"ts", "2026-11-29T16:14:43Z"},
                          {"ts_us", i},
                          {"event", bad.count(i) ? "zero_window" : (i % 2 ? "retransmit" : "recv_rst")}}));
  }
  sink.flush();
  sink.begin_close(sinks::SteadyClock::now() + 60s);
  ASSERT_TRUE(sink.wait_closed(sinks::SteadyClock::now() + 70s));
  auto c = sink.counts();
  EXPECT_EQ(c.delivered, 3000u - bad.size()) << sink.summary();
  EXPECT_EQ(c.rejected, bad.size()) << sink.summary();
  EXPECT_EQ(server_->count(db_ + ".ebpf_tcp_loss"), 3000 - static_cast<long long>(bad.size()));
  EXPECT_EQ(server_->count(db_ + ".ebpf_tcp_loss WHERE ts_us IN (0, 777, 1500, 2999)"), 0);
}

}  // namespace
}  // namespace pyebpf::e2e
