// SPDX-License-Identifier: Apache-2.0
// handoff end to end: Debian's gunicorn (gthread worker, 2 threads) serving an
// app that sleeps per request, loaded from loopback above its capacity.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

using namespace std::chrono_literals;

constexpr double kSleepS = 0.1;  // service time per request
constexpr int kThreads = 2;
constexpr int kPerClient = 6;

PythonBuild client_python() {
  return {"debian-3.11", "/usr/bin/python3.11", 11};
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct GunicornRun {
  Json ready;
  Json truth;
  std::vector<Json> handoffs;
  std::vector<Json> summaries;
};

// gunicorn + clients at concurrency 2 (= capacity) then 8 (4x capacity).
GunicornRun run_gunicorn(std::vector<std::string> extra) {
  if (!std::filesystem::exists("/usr/bin/gunicorn")) {
    ADD_FAILURE() << "/usr/bin/gunicorn is missing: run tools/install-deps";
    return {};
  }
  Workload workload(client_python(), "handoff_load.py",
                    {std::to_string(kThreads), std::to_string(kSleepS), std::to_string(kPerClient), "2", "8"});
  std::vector<std::string> args{
      "-p", std::to_string(workload.ready().at("pid").get<int>()), "-e", "e2e", "--enable", "handoff"};
  args.insert(args.end(), extra.begin(), extra.end());
  Pyebpf pyebpf(args);
  pyebpf.wait_ready();
  workload.go();
  GunicornRun run;
  run.ready = workload.ready();
  run.truth = workload.result(120s);
  std::this_thread::sleep_for(1500ms);  // one more request_queue summary after the load
  pyebpf.stop();
  EXPECT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  run.handoffs = pyebpf.events("handoff");
  run.summaries = pyebpf.events("request_queue");
  return run;
}

std::vector<double> handoffs_in(const std::vector<Json>& events, const Json& phase) {
  std::vector<double> out;
  for (const auto& e : events) {
    auto ts = e.at("ts_us").get<std::int64_t>();  // the queue time
    if (ts >= phase.at("start_us").get<std::int64_t>() && ts <= phase.at("end_us").get<std::int64_t>())
      out.push_back(e.at("handoff_ms").get<double>());
  }
  return out;
}

TEST(HandoffE2E, GthreadWorkerHandoffsNameThreadsAndGrowWithLoad) {
  GunicornRun run = run_gunicorn({"--rq-interval", "1"});
  ASSERT_FALSE(run.truth.is_null());
  const int pid = run.ready.at("pid");
  const auto& phases = run.truth.at("phases");

  // Every request the clients made was queued by the main thread and picked
  // up by a pool thread exactly once (new connections via accept, keep-alive
  // ones via epoll_ctl DEL).
  EXPECT_EQ(run.handoffs.size(), run.truth.at("requests").get<std::size_t>());
  static const std::regex pool_thread(R"(ThreadPoolExecutor-0_[01])");
  std::set<std::string> paths, workers;
  for (const auto& e : run.handoffs) {
    EXPECT_EQ(e.at("pid"), pid);
    EXPECT_EQ(e.at("main_tid"), pid) << "the worker process's main thread queues";
    EXPECT_NE(e.at("worker_tid"), e.at("main_tid"));
    EXPECT_EQ(e.at("tid"), e.at("worker_tid"));
    EXPECT_EQ(e.at("main_thread_name"), "MainThread");
    EXPECT_TRUE(std::regex_match(e.at("worker_thread_name").get<std::string>(), pool_thread))
        << e.at("worker_thread_name");
    EXPECT_EQ(e.at("thread_name"), e.at("worker_thread_name"));
    EXPECT_EQ(e.at("main_comm"), "gunicorn");
    EXPECT_EQ(e.at("worker_comm"), "gunicorn");
    EXPECT_EQ(e.at("pickup_via"), "recvfrom");
    EXPECT_EQ(e.at("duration_ms"), e.at("handoff_ms"));
    EXPECT_GE(e.at("fd").get<int>(), 3);
    EXPECT_EQ(e.at("ts"), e.at("queued_time"));
    EXPECT_LT(e.at("queued_time").get<std::string>(), e.at("pickup_time").get<std::string>());
    paths.insert(e.at("queue_path"));
    workers.insert(e.at("worker_thread_name"));
  }
  EXPECT_EQ(paths, (std::set<std::string>{"accept", "epoll_del"}));
  EXPECT_EQ(workers.size(), 2u);

  // At capacity nothing queues; at 4x capacity each request waits for about
  // 3 service times, as the clients measured themselves.
  const auto& at_capacity = phases.at(0);
  const auto& overloaded = phases.at(1);
  auto low = handoffs_in(run.handoffs, at_capacity);
  auto high = handoffs_in(run.handoffs, overloaded);
  ASSERT_EQ(low.size(), at_capacity.at("requests").get<std::size_t>());
  ASSERT_EQ(high.size(), overloaded.at("requests").get<std::size_t>());
  double low_ms = median(low), high_ms = median(high);
  double client_high_ms = overloaded.at("queue_median_ms");
  EXPECT_LT(low_ms, kSleepS * 1000 / 2) << "at capacity";
  EXPECT_GT(high_ms, low_ms + kSleepS * 1000) << "overloaded";
  EXPECT_NEAR(high_ms, client_high_ms, std::max(0.15 * client_high_ms, 30.0))
      << "pyebpf's median handoff vs the clients' own queueing";
  EXPECT_LE(high_ms, client_high_ms + 5) << "the handoff is part of what the client waited";

  // request_queue: one summary a second, together counting every pickup.
  ASSERT_GE(run.summaries.size(), 3u);
  std::uint64_t picked = 0, queued = 0, peer_closed = 0;
  std::uint64_t max_threads = 0;
  double max_p99 = 0;
  for (const auto& s : run.summaries) {
    EXPECT_EQ(s.at("pid"), pid);
    picked += s.at("picked_up").get<std::uint64_t>();
    queued += s.at("queued").get<std::uint64_t>();
    peer_closed += s.at("peer_closed").get<std::uint64_t>();
    max_threads = std::max(max_threads, s.at("threads_used").get<std::uint64_t>());
    max_p99 = std::max(max_p99, s.at("handoff_p99_ms").get<double>());
    EXPECT_LE(s.at("handoff_p50_ms").get<double>(), s.at("handoff_p99_ms").get<double>() + 1e-9);
    EXPECT_EQ(s.at("cancelled"), 0);
  }
  EXPECT_EQ(picked, run.handoffs.size());
  // Each client's final close makes its idle keep-alive connection readable:
  // queued and picked up like a request, but recognised as the peer's FIN.
  EXPECT_EQ(peer_closed, 2u + 8u);
  EXPECT_EQ(queued, picked + peer_closed);
  EXPECT_EQ(max_threads, 2u);
  double max_event_ms = 0;
  for (const auto& e : run.handoffs) max_event_ms = std::max(max_event_ms, e.at("handoff_ms").get<double>());
  EXPECT_NEAR(max_p99, max_event_ms, 0.15 * max_event_ms) << "p99 from the BPF histogram";
  EXPECT_EQ(run.summaries.back().at("queued_now"), 0);
}

TEST(HandoffE2E, MinMsFiltersEventsInBpfButSummariesCountEveryPickup) {
  GunicornRun run = run_gunicorn({"--handoff-min-ms", "50", "--rq-interval", "1"});
  ASSERT_FALSE(run.truth.is_null());
  const auto& overloaded = run.truth.at("phases").at(1);
  ASSERT_FALSE(run.handoffs.empty());
  for (const auto& e : run.handoffs) EXPECT_GE(e.at("handoff_ms").get<double>(), 50.0);
  EXPECT_TRUE(handoffs_in(run.handoffs, run.truth.at("phases").at(0)).empty()) << "nothing queues at capacity";
  // Requests that waited behind at least one service time are all reported.
  EXPECT_GE(run.handoffs.size(), overloaded.at("requests").get<std::size_t>() - 2 * kThreads);
  std::uint64_t picked = 0;
  for (const auto& s : run.summaries) picked += s.at("picked_up").get<std::uint64_t>();
  EXPECT_EQ(picked, run.truth.at("requests").get<std::uint64_t>());
}

}  // namespace
}  // namespace pyebpf::e2e
