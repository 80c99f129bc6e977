// The end-of-run report from synthetic events of every tracker (their fields
// as the issues define them): the numbers in each section and the width.
#include "sinks/report.hpp"

#include "app/registry.hpp"
#include "sinks/record_input.hpp"
#include "sinks/report_text.hpp"
#include "text_lines.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace pyebpf::sinks {
namespace {

using Json = nlohmann::ordered_json;
using report::Distribution;
using test::line_with;

std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void expect_fits(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(columns(line), report::kWidth) << line;
}

Json thread_event(const char* metric, const char* thread, long tid) {
  return {{"metric", metric},  {"env", "t"},           {"ts", "2026-11-29T16:14:43.000000Z"},
          {"ts_us", 1},        {"pid", 100},           {"tid", tid},
          {"comm", "python3"}, {"thread_name", thread}};
}

// Adds an event given as pyebpf prints it, read back as `pyebpf report` does.
void feed(Report& report, const Json& e) {
  const TableSchema* schema = app::schema_for_metric(e.at("metric").get<std::string>());
  ASSERT_NE(schema, nullptr) << e.dump();
  Record r(*schema);
  record_from_json(e, r);
  report.add(r);
}

TEST(Distribution, NearestRankPercentiles) {
  Distribution d;
  for (int i = 1; i <= 100; ++i) d.add(i);
  EXPECT_EQ(d.count(), 100u);
  EXPECT_DOUBLE_EQ(d.total(), 5050);
  EXPECT_DOUBLE_EQ(d.percentile(0.5), 50);
  EXPECT_DOUBLE_EQ(d.percentile(0.99), 99);
  EXPECT_DOUBLE_EQ(d.percentile(1.0), 100);
  EXPECT_DOUBLE_EQ(d.max(), 100);
  Distribution one;
  one.add(7);
  EXPECT_DOUBLE_EQ(one.percentile(0.99), 7);
  EXPECT_DOUBLE_EQ(Distribution().percentile(0.5), 0);
}

TEST(Report, CpuSharesAndFunctions) {
  Report r = app::make_report();
  auto sample = [&](const char* thread, const std::string& stack) {
    Json e = thread_event("py_stack", thread, 1);
    e["stack"] = stack;
    feed(r, e);
  };
  const std::string root = "<module> (/srv/app/main.py:40)";
  for (int i = 0; i < 60; ++i)
    sample("MainThread", root + ";handle (/srv/app/views.py:12);render (/srv/app/views.py:30)");
  for (int i = 0; i < 30; ++i) sample("Worker-1", root + ";handle (/srv/app/views.py:12);query (/srv/app/db.py:7)");
  for (int i = 0; i < 10; ++i) sample("Worker-1", root + ";handle (/srv/app/views.py:13)");
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[py_stack: 100 samples, 2 threads]"), std::string::npos) << text;
  std::string top = line_with(text, "render (views.py:30)");
  EXPECT_NE(top.find("60.0%"), std::string::npos) << top;
  EXPECT_NE(top.find(" 60 MainThread"), std::string::npos) << top;
  EXPECT_NE(line_with(text, "query (db.py:7)").find("30.0%"), std::string::npos);
  // Functions: handle is on top in 10 samples (line 13) and in all 100.
  std::string handle = line_with(text, "handle (/srv/app/views.py)");
  EXPECT_NE(handle.find("10.0% 100.0%"), std::string::npos) << handle;
  EXPECT_NE(text.find("threads: MainThread 60.0%, Worker-1 40.0%"), std::string::npos) << text;
}

// Every wait counted in gil_stats (one record here), a holder table from the gil_wait events.
Json gil_stats_event(std::uint64_t waits, double total_ms, std::uint64_t reported) {
  Json e = thread_event("gil_stats", "Waiter-1", 2);
  e["interval_s"] = 10.0;
  e["waits"] = waits;
  e["total_wait_ms"] = total_ms;
  e["p50_ms"] = 0;
  e["p90_ms"] = 0;
  e["p99_ms"] = 0;
  e["max_ms"] = 10.0;
  e["reported"] = reported;
  return e;
}

TEST(Report, GilHoldersByWaitCaused) {
  Report r = app::make_report();
  feed(r, gil_stats_event(7, 51, 7));
  auto wait = [&](const char* waiter, double ms, const char* holder, const char* holder_stack) {
    Json e = thread_event("gil_wait", waiter, 2);
    e["duration_ms"] = ms;
    e["holder_tid"] = 9;
    e["holder_thread_name"] = holder;
    e["waiter_py_stack"] = "run (w.py:1);io (w.py:5)";
    e["holder_py_stack"] = holder_stack;
    feed(r, e);
  };
  for (int i = 0; i < 4; ++i) wait("Waiter-1", 10, "CpuHog", "run (h.py:1);crunch (/srv/h.py:22)");
  for (int i = 0; i < 2; ++i) wait("Waiter-2", 5, "CpuHog", "run (h.py:1);crunch (/srv/h.py:22)");
  wait("Waiter-1", 1, "Other", "");
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[gil_stats: 7 waits, 51.000 ms; gil_wait: 7 waits]"), std::string::npos) << text;
  std::string hog = line_with(text, "CpuHog");
  EXPECT_NE(hog.find("50.000 6 CpuHog"), std::string::npos) << hog;
  EXPECT_NE(hog.find("crunch (h.py:22)"), std::string::npos) << hog;
  // The waiting threads are listed under their holder's row.
  auto waiters = text.find("waiting (ms): Waiter-1 40.000, Waiter-2 10.000\n");
  ASSERT_NE(waiters, std::string::npos) << text;
  EXPECT_LT(text.find("CpuHog"), waiters);
  EXPECT_LT(waiters, text.find("Other"));
  EXPECT_NE(line_with(text, "Other").find("(no Python stack)"), std::string::npos);
  // Largest first.
  EXPECT_LT(text.find("CpuHog"), text.find("Other"));
}

// gc_stats records count every collection: the section sums them (two
// intervals of generation 0 merge, histograms included) and ignores the
// gc_pause events, which are only the collections above the threshold.
TEST(Report, GcStatsCountEveryCollection) {
  Report r = app::make_report();
  auto stats = [&](int gen, std::uint64_t count, double total_ms, double max_ms, Json histogram) {
    Json e = thread_event("gc_stats", "MainThread", 1);
    e["interval_s"] = 10.0;
    e["generation"] = gen;
    e["count"] = count;
    e["timed"] = count;
    e["total_ms"] = total_ms;
    e["p50_ms"] = 0;
    e["p99_ms"] = 0;
    e["max_ms"] = max_ms;
    e["collected"] = 5;
    e["uncollectable"] = 0;
    e["histogram"] = std::move(histogram);
    feed(r, e);
  };
  stats(0, 60, 6.0, 0.2, Json::array({Json::array({96, 112, 60})}));
  stats(0, 40, 4.0, 0.25, Json::array({Json::array({96, 112, 39}), Json::array({224, 256, 1})}));
  stats(2, 1, 30.0, 30.0, Json::array({Json::array({28672, 32768, 1})}));
  Json pause = thread_event("gc_pause", "MainThread", 1);
  pause["duration_ms"] = 30.0;
  pause["generation"] = 2;
  feed(r, pause);
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[gc_stats: 101 collections, 101 timed one by one]"), std::string::npos) << text;
  std::string gen0 = line_with(text, " 0 100 ");
  EXPECT_NE(gen0.find("100 10.000 0.104 0.112 0.250"), std::string::npos) << text;  // p50, p99 in the 96-112 us bucket
  std::string gen2 = line_with(text, " 2 1 ");
  EXPECT_NE(gen2.find("1 30.000 30.000 30.000 30.000"), std::string::npos) << text;  // capped by the exact max
}

// Collections counted without probes have no percentiles; the share of CPU
// GC took comes from the gc_cpu records' samples.
TEST(Report, UntimedCollectionsAndGcShareOfCpu) {
  Report r = app::make_report();
  Json e = thread_event("gc_stats", "MainThread", 1);
  e["interval_s"] = 10.0;
  e["generation"] = 0;
  e["count"] = 15000;
  e["timed"] = 0;
  e["collected"] = 0;
  e["uncollectable"] = 0;
  e["histogram"] = Json::array();
  feed(r, e);
  for (int samples : {300, 100}) {
    Json cpu = thread_event("gc_cpu", "MainThread", 1);
    cpu["interval_s"] = 10.0;
    cpu["samples"] = samples;
    cpu["gc_samples"] = samples / 10;
    cpu["gc_percent"] = 10.0;
    cpu["gc_cpu_ms"] = samples * 10.0 / 99 * 10;
    feed(r, cpu);
  }
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[gc_stats: 15000 collections, 0 timed one by one]"), std::string::npos) << text;
  EXPECT_NE(line_with(text, " 0 15000 ").find("0 - - - -"), std::string::npos) << text;
  EXPECT_NE(text.find("GC's share of the targets' CPU: 10.0 % (40 of 400 samples"), std::string::npos) << text;
}

// gil_stats records count every wait: the section's numbers come from them
// (two intervals merge, histograms included); the gil_wait events, only the
// waits at or above the threshold, still name the holders.
TEST(Report, GilStatsCountEveryWait) {
  Report r = app::make_report();
  auto stats = [&](std::uint64_t waits, double total_ms, double max_ms, std::uint64_t reported, Json histogram) {
    Json e = gil_stats_event(waits, total_ms, reported);
    e["max_ms"] = max_ms;
    e["histogram"] = std::move(histogram);
    feed(r, e);
  };
  stats(600, 60.0, 0.11, 0, Json::array({Json::array({96, 112, 600})}));
  stats(400, 41.0, 1.2, 1, Json::array({Json::array({96, 112, 399}), Json::array({1024, 1280, 1})}));
  Json wait = thread_event("gil_wait", "Waiter-1", 2);
  wait["duration_ms"] = 1.2;
  wait["holder_tid"] = 9;
  wait["holder_thread_name"] = "CpuHog";
  wait["holder_py_stack"] = "run (h.py:1);crunch (/srv/h.py:22)";
  feed(r, wait);
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[gil_stats: 1000 waits, 101.0 ms; gil_wait: 1 waits]"), std::string::npos) << text;
  EXPECT_NE(text.find("every wait: total 101.0 ms, p50 0.104 ms, p90 0.110 ms, p99 0.112 ms, max 1.200 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 at or above --gil-min-wait-ms"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "CpuHog").find("1.200 1 CpuHog"), std::string::npos) << text;
}

TEST(Report, OffCpuReasonsWhicheverStackOrder) {
  Report r = app::make_report();
  auto off = [&](const char* thread, double ms, Json kernel, const char* state = "S") {
    Json e = thread_event("off_cpu", thread, 3);
    e["off_cpu_ms"] = ms;
    e["runq_ms"] = 0.5;
    e["prev_state"] = state;
    e["kernel_stack"] = std::move(kernel);
    e["py_stack"] = "main (/srv/a.py:1);wait_for_lock (/srv/a.py:9)";
    feed(r, e);
  };
  // Leaf first (as the original tool) and root first: both give "futex".
  off("Locker", 100, {"schedule", "futex_wait_queue", "futex_wait", "do_futex", "__x64_sys_futex", "do_syscall_64"});
  off("Locker", 50, {"entry_SYSCALL_64", "do_syscall_64", "__x64_sys_futex", "do_futex", "futex_wait", "schedule"});
  off("Sleeper", 20, {"entry_SYSCALL_64", "do_nanosleep", "schedule"});
  Json agg = thread_event("off_cpu", "Piper", 4);  // aggregated mode: one event for many switches
  agg["off_cpu_ms"] = 300;
  agg["count"] = 3;
  agg["prev_state"] = "S";
  agg["kernel_stack"] = Json::array({"__x64_sys_read+0x1a", "pipe_read", "schedule"});
  feed(r, agg);
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("[off_cpu: 6 switches, 470.0 ms off CPU, 1.500 ms in run queue]"), std::string::npos) << text;
  std::string futex = line_with(text, "futex");
  EXPECT_NE(futex.find("150.0 2 100.0 S futex"), std::string::npos) << futex;
  EXPECT_NE(futex.find("wait_for_lock (a.py:9)"), std::string::npos) << futex;
  EXPECT_NE(line_with(text, "Sleeper").find("do_nanosleep"), std::string::npos) << text;
  std::string read = line_with(text, "Piper");
  EXPECT_NE(read.find("300.0 3 100.0 S read"), std::string::npos) << read;
  EXPECT_LT(text.find("Piper"), text.find("Locker"));  // most time first
}

TEST(Report, TcpLatencyAndLoss) {
  Report r = app::make_report();
  auto connect = [&](const char* outcome, double us) {
    Json e = thread_event("tcp_connect", "MainThread", 1);
    e["outcome"] = outcome;
    e["handshake_us"] = us;
    feed(r, e);
  };
  for (int i = 1; i <= 100; ++i) connect("success", i * 100.0);  // 0.1 .. 10 ms
  connect("refused", 50);
  Json a = thread_event("tcp_accept", "Acceptor", 2);
  a["accept_dwell_us"] = 2500;
  a["handshake_rtt_us"] = 40;
  a["accept_queue_len"] = 128;
  a["accept_queue_max"] = 128;
  feed(r, a);
  for (const char* ev : {"retransmit", "retransmit", "recv_rst"}) {
    Json l = {{"metric", "tcp_loss"}, {"event", ev}, {"dst_ip", "10.0.0.2"}, {"dst_port", 443}};
    feed(r, l);
  }
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(line_with(text, " success").find("100 5.000 9.900 10.000"), std::string::npos) << text;
  EXPECT_NE(line_with(text, " refused").find("1 0.050 0.050 0.050"), std::string::npos) << text;
  EXPECT_NE(text.find("[tcp_accept: 1 accepts; accept queue full at 1 of them]"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "accept-queue dwell").find("1 2.500 2.500 2.500"), std::string::npos);
  EXPECT_NE(text.find("by event: retransmit 2, recv_rst 1"), std::string::npos) << text;
  EXPECT_NE(text.find("top peers: 10.0.0.2:443 3"), std::string::npos) << text;
}

TEST(Report, HandoffAndHostNetHealth) {
  Report r = app::make_report();
  for (int i = 1; i <= 10; ++i) {
    Json e = thread_event("handoff", "ThreadPoolExecutor-0_0", 5);
    e["handoff_ms"] = i * 1.0;
    e["worker_thread_name"] = i % 2 ? "ThreadPoolExecutor-0_0" : "ThreadPoolExecutor-0_1";
    feed(r, e);
  }
  for (int i = 0; i < 3; ++i) {
    feed(r, {{"metric", "request_queue"},
             {"picked_up", 10},
             {"cancelled", i},
             {"queued_max", 2 + i},
             {"oldest_queued_ms", 1.5 * i},
             {"threads_used", 2}});
  }
  for (int i = 0; i < 2; ++i) {
    Json h = {{"metric", "host_net_health"},
              {"established_inbound", 5},
              {"established_outbound", 7},
              {"time_wait", 3},
              {"close_wait", 150},
              {"syn_sent", 0},
              {"syn_recv", 0},
              {"warnings", {"close_wait=150 (possible fd leak)"}}};
    feed(r, h);
  }
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(line_with(text, " all ").find("10 5.000 10.000 10.000"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "ThreadPoolExecutor-0_1").find("5 6.000 10.000 10.000"), std::string::npos);
  for (const char* item : {"request_queue: 3 summaries, 30 picked up, 3 cancelled,", "at most 4 waiting,",
                           "oldest wait 3.000 ms,", "2 worker threads"})
    EXPECT_NE(text.find(item), std::string::npos) << item << "\n" << text;
  EXPECT_NE(text.find("[host_net_health: 2 snapshots]"), std::string::npos);
  EXPECT_NE(text.find("5 established in / 7 out, 3 time_wait, 150 close_wait"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "possible fd leak").find(" 2 close_wait=150"), std::string::npos) << text;
}

// A file handed to `pyebpf report` may hold any number where a count, a
// generation or a tid belongs; converting one out of an integer's range was
// undefined behaviour (UBSan: "1e+300 is outside the range of representable
// values of type 'long'"). record_from_json leaves such values absent.
TEST(Report, NumbersNoCountCanHoldAreIgnored) {
  Report r = app::make_report();
  for (Json picked_up : {Json(3), Json(-5), Json(1e300), Json(-1e300), Json(18446744073709551615ull)})
    feed(r, {{"metric", "request_queue"}, {"picked_up", picked_up}, {"cancelled", picked_up}});
  for (Json generation : {Json(1e300), Json(-1e300), Json(2)}) {
    Json gc = thread_event("gc_stats", "MainThread", 1);
    gc["interval_s"] = 10.0;
    gc["generation"] = generation;
    gc["count"] = 1;
    gc["timed"] = 0;
    gc["total_ms"] = 1.5;
    gc["collected"] = 0;
    gc["uncollectable"] = 0;
    feed(r, gc);
  }
  Json off = thread_event("off_cpu", "MainThread", 1);
  off["off_cpu_ms"] = 4;
  off["count"] = -1e300;
  feed(r, off);
  feed(r, gil_stats_event(1, 2, 1));
  Json gil = thread_event("gil_wait", "waiter", 2);
  gil["duration_ms"] = 2;
  gil["holder_tid"] = 1e300;
  feed(r, gil);
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("request_queue: 5 summaries, 3 picked up, 3 cancelled,"), std::string::npos) << text;
  EXPECT_NE(line_with(text, " 2 1 ").find("1.500"), std::string::npos) << "generation 2 kept\n" << text;
  EXPECT_NE(line_with(text, " ? 2 ").find("3.000"), std::string::npos) << "the rest: unknown\n" << text;
  EXPECT_NE(text.find("[off_cpu: 1 switches, 4.000 ms off CPU"), std::string::npos) << text;
  EXPECT_NE(text.find("(unknown holder)"), std::string::npos) << text;
}

TEST(Report, LongNamesStayWithinTheWidth) {
  Report r = app::make_report();
  std::string deep;
  for (int i = 0; i < 50; ++i)
    deep += (deep.empty() ? "" : ";") + std::string("función_muy_larga_") + std::to_string(i) +
            " (/very/long/path/to/a/módulo.py:" + std::to_string(i) + ")";
  Json e = thread_event("py_stack", "A-thread-with-a-really-long-name-that-goes-on", 1);
  e["stack"] = deep;
  feed(r, e);
  Json g = thread_event("gil_wait", "waiter-with-a-long-long-long-long-name", 2);
  g["duration_ms"] = 3;
  g["holder_thread_name"] = "holder-with-a-long-long-long-long-long-name";
  g["holder_py_stack"] = deep;
  feed(r, g);
  std::string text = r.render();
  expect_fits(text);
  EXPECT_NE(text.find("función_muy_larga_49 (módulo.py:49)"), std::string::npos) << text;  // the leaf survives the cut
}

TEST(Report, EndOfRunTextHasSummaryLinesThenReport) {
  Report r = app::make_report();
  std::string text = end_of_run_text(12.34, "received SIGINT", {"py_stack: 5 samples", "sqlite: 5 events"}, &r);
  EXPECT_EQ(text.rfind("pyebpf: ran 12.3 s (received SIGINT)\npyebpf: py_stack: 5 samples\npyebpf: sqlite: 5 events\n\n"
                       "Events: none\n",
                       0),
            0u)
      << text;
}

}  // namespace
}  // namespace pyebpf::sinks
