// pyebpf top's view from synthetic events of every tracker that feeds it, as
// pyebpf prints them: each tracker's share through the registry's top_feed,
// the intervals, the screen's text at 80x24, and the keys.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <sstream>

#include "app/registry.hpp"
#include "live/live_view.hpp"
#include "live/tally.hpp"
#include "live/view_text.hpp"
#include "sinks/record_input.hpp"
#include "text_lines.hpp"

namespace pyebpf::live {
namespace {

using Json = nlohmann::ordered_json;
using test::line_with;
using test::squashed;

Json thread_event(const char* metric, const char* thread, long tid) {
  return {{"metric", metric},  {"env", "t"},           {"ts", "2026-11-29T16:14:43.000000Z"},
          {"ts_us", 1},        {"pid", 100},           {"tid", tid},
          {"comm", "python3"}, {"thread_name", thread}};
}

class TopFeed : public ::testing::Test {
 protected:
  void feed(const Json& e) {
    const sinks::TableSchema* schema = app::schema_for_metric(e.at("metric").get<std::string>());
    ASSERT_NE(schema, nullptr) << e.dump();
    sinks::Record r(*schema);
    sinks::record_from_json(e, r);
    feed_(r, tally_);
  }
  void samples(const char* thread, long tid, const std::string& stack, int n) {
    Json e = thread_event("py_stack", thread, tid);
    e["stack"] = stack;
    for (int i = 0; i < n; ++i) feed(e);
  }
  void off_cpu(const char* thread, long tid, double ms) {
    Json e = thread_event("off_cpu", thread, tid);
    e["off_cpu_ms"] = ms;
    e["runq_ms"] = 0.1;
    e["prev_state"] = "S";
    e["kernel_stack"] = Json::array({"entry_SYSCALL_64", "do_syscall_64", "__x64_sys_futex", "futex_wait", "schedule"});
    e["py_stack"] = "run (/srv/w.py:1);get (/usr/lib/python3.11/queue.py:154)";
    feed(e);
  }
  void gil_wait(const char* thread, long tid, double ms, const char* holder) {
    Json e = thread_event("gil_wait", thread, tid);
    e["duration_ms"] = ms;
    e["holder_thread_name"] = holder;
    feed(e);
  }
  void gc_pause(long tid, double ms) {
    Json e = thread_event("gc_pause", "MainThread", tid);
    e["duration_ms"] = ms;
    e["generation"] = 2;
    feed(e);
  }

  // py_stack at the default 99 Hz: each sample is 1/99 s.
  app::TrackerOptionsMap options_ = [] {
    CLI::App cli;
    return app::add_tracker_options(cli);
  }();
  std::function<void(const sinks::Record&, Tally&)> feed_ = app::top_feed(options_);
  Tally tally_;
};

TEST_F(TopFeed, EachTrackerFillsItsPartOfTheThreads) {
  samples("MainThread", 1, "<module> (/srv/app.py:1);handle (/srv/app.py:10);spin (/srv/app.py:20)", 99);
  samples("Worker", 2, "run (/srv/w.py:1);parse (/srv/w.py:30)", 33);
  gil_wait("Worker", 2, 200, "MainThread");
  off_cpu("Worker", 2, 300);
  off_cpu("Worker", 2, 100);
  gc_pause(1, 50);
  gc_pause(1, 10);

  const Window w = tally_.roll(1.0, 3);
  EXPECT_EQ(w.samples, 132u);
  EXPECT_EQ(w.lost, 3u);
  ASSERT_EQ(w.threads.size(), 2u);
  const ThreadTime& main = w.threads.at(1);
  EXPECT_EQ(main.name, "MainThread");
  EXPECT_NEAR(main.cpu_ms, 1000, 1e-6);
  EXPECT_NEAR(main.waits.at("GC").ms, 60, 1e-9);
  const ThreadTime& worker = w.threads.at(2);
  EXPECT_NEAR(worker.cpu_ms, 333.33, 0.01);
  EXPECT_NEAR(worker.waits.at("GIL").ms, 200, 1e-9);
  EXPECT_EQ(worker.waits.at("GIL").main_reason(), "held by MainThread");
  EXPECT_NEAR(worker.waits.at("off-CPU").ms, 400, 1e-9);
  EXPECT_EQ(worker.waits.at("off-CPU").main_reason(), "futex in get (queue.py:154)");
  EXPECT_EQ(w.wait_kinds, (std::vector<std::string>{"GIL", "off-CPU", "GC"}));
  EXPECT_EQ(w.pauses.at("GC pauses").count(), 2u);
  EXPECT_DOUBLE_EQ(w.pauses.at("GC pauses").max(), 50);

  // Functions: self on top of the stack, total anywhere (once per sample).
  const FunctionTime& spin = main.functions.at({"spin", "/srv/app.py", 0});
  EXPECT_NEAR(spin.self_ms, 1000, 1e-6);
  const FunctionTime& module = main.functions.at({"<module>", "/srv/app.py", 0});
  EXPECT_EQ(module.self_ms, 0);
  EXPECT_NEAR(module.total_ms, 1000, 1e-6);
}

TEST_F(TopFeed, IntervalsStartEmptyAndSinceStartAddsThemUp) {
  samples("MainThread", 1, "f (/a.py:1)", 10);
  tally_.roll(1.0, 1);
  samples("MainThread", 1, "g (/a.py:5)", 5);
  const Window second = tally_.roll(2.0, 4);
  EXPECT_EQ(second.samples, 5u);
  EXPECT_DOUBLE_EQ(second.seconds, 2.0);
  EXPECT_EQ(second.lost, 3u) << "lost in this interval only";
  EXPECT_EQ(second.threads.at(1).functions.count({"f", "/a.py", 0}), 0u);
  EXPECT_EQ(tally_.since_start().samples, 15u);
  EXPECT_DOUBLE_EQ(tally_.since_start().seconds, 3.0);
  EXPECT_EQ(tally_.since_start().lost, 4u);
}

TEST_F(TopFeed, BothSpansAreShownAtOnce) {
  samples("MainThread", 1, "f (/a.py:1)", 10);
  tally_.roll(1.0, 1);
  samples("MainThread", 1, "g (/a.py:5)", 5);
  const Window last = tally_.roll(2.0, 4);
  const Window& all = tally_.since_start();
  ViewState state;
  auto lines = render(last, all, state, "t", Screen{80, 24});
  std::ostringstream text;
  for (const auto& l : lines) text << l << "\n";
  SCOPED_TRACE(text.str());
  EXPECT_NE(lines.at(0).find("last 2.0 s"), std::string::npos);
  EXPECT_EQ(squashed(lines.at(2)).rfind("since start (3 s): CPU", 0), 0u) << "the other span's totals";
  EXPECT_NE(squashed(lines.at(2)).find("15 samples lost 4"), std::string::npos);
  EXPECT_NE(line_with(lines, "SELF* TOTAL ALL FUNCTION").size(), 0u);
  EXPECT_NE(line_with(lines, "100.0% 100.0% 33.3% g (a.py)").size(), 0u) << "g: all of the last 2 s, 5 of 15 samples";
  EXPECT_EQ(line_with(lines, "f (a.py)").size(), 0u) << "f ran before the last interval";

  state.since_start = true;
  lines = render(all, last, state, "t", Screen{80, 24});
  EXPECT_NE(lines.at(0).find("since start (3 s)"), std::string::npos);
  EXPECT_EQ(squashed(lines.at(2)).rfind("last 2.0 s: CPU", 0), 0u);
  EXPECT_NE(line_with(lines, "SELF* TOTAL LAST FUNCTION").size(), 0u);
  EXPECT_NE(line_with(lines, "66.7% 66.7% 0.0% f (a.py)").size(), 0u) << "f: 10 of 15 samples, none lately";
  EXPECT_NE(line_with(lines, "33.3% 33.3% 100.0% g (a.py)").size(), 0u);
}

TEST_F(TopFeed, ScreenFitsAt80x24AndShowsSharesAndWaits) {
  samples("MainThread", 1, "<module> (/srv/app.py:1);spin_with_a_very_long_function_name_indeed (/srv/app.py:20)", 66);
  samples("Worker", 2, "run (/srv/w.py:1);parse (/srv/w.py:30)", 33);
  off_cpu("Worker", 2, 500);
  const Window w = tally_.roll(1.0, 0);
  const auto lines =
      render(w, tally_.since_start(), ViewState{}, "pyebpf top: 100 python3 | py_stack offcpu", Screen{80, 24});
  EXPECT_LE(lines.size(), 24u);
  for (const auto& l : lines) EXPECT_LE(sinks::report::columns(l), 80u) << l;
  std::ostringstream text;
  for (const auto& l : lines) text << l << "\n";
  SCOPED_TRACE(text.str());
  EXPECT_NE(line_with(lines, "CPU 100.0% of a core, 99 samples lost 0").size(), 0u);
  // Shares of the samples: self, then total, then self since the start (the same, after one interval).
  EXPECT_NE(line_with(lines, "66.7% 66.7% 66.7% spin_with_a_very_long").size(), 0u);
  EXPECT_NE(line_with(lines, "0.0% 66.7% 0.0% <module> (app.py)").size(), 0u);
  // Per thread, shares of the interval: CPU 333 ms = 33.3 %, off-CPU 500 ms = 50 %.
  EXPECT_NE(line_with(lines, "Worker 2 33.3% 50.0% off-CPU: futex in get (queue.py:154)").size(), 0u);
  EXPECT_NE(line_with(lines, "MainThread 1 66.7% 0.0%").size(), 0u);
  EXPECT_EQ(lines.back(), keys_help()) << "the keys fit";
}

TEST_F(TopFeed, ManyThreadsAndFunctionsAreCutToTheScreen) {
  for (int i = 1; i <= 40; ++i) {
    const std::string name = "T" + std::to_string(i);
    samples(name.c_str(), i, "f" + std::to_string(i) + " (/a.py:1)", i);
  }
  const Window w = tally_.roll(1.0, 0);
  const auto lines = render(w, tally_.since_start(), ViewState{}, "t", Screen{80, 24});
  EXPECT_EQ(lines.size(), 24u);
  EXPECT_NE(line_with(lines, "f40 (a.py)").size(), 0u) << "the busiest function is listed";
  EXPECT_NE(line_with(lines, "T40 40").size(), 0u) << "the busiest thread is listed";
}

TEST_F(TopFeed, ThreadsBeyondTheBoundAreCountedTogether) {
  for (int i = 1; i <= 5000; ++i) samples("T", i, "f (/a.py:1)", 1);
  const Window w = tally_.roll(1.0, 0);
  EXPECT_EQ(w.samples, 5000u);
  ASSERT_EQ(w.threads.size(), 4097u) << "4096 threads, then one for the rest";
  EXPECT_EQ(w.threads.at(0).name, "(other threads)");
  EXPECT_NEAR(w.threads.at(0).cpu_ms, 904 * 1000.0 / 99, 1e-6);
}

TEST_F(TopFeed, SortAndThreadFilterChangeWhatIsListed) {
  samples("MainThread", 1, "outer (/a.py:1);inner (/a.py:9)", 10);
  samples("Worker", 2, "work (/w.py:1)", 30);
  const Window w = tally_.roll(1.0, 0);
  ViewState state;
  auto first_function = [&] {
    auto lines = render(w, tally_.since_start(), state, "t", Screen{80, 24});
    return squashed(lines.at(5));  // header, totals, the other span's, blank, column names, first row
  };
  EXPECT_NE(first_function().find("work (w.py)"), std::string::npos);
  state.tid = 1;
  EXPECT_NE(first_function().find("inner (a.py)"), std::string::npos) << "only MainThread's samples";
  state.sort = ViewState::Sort::Total;
  EXPECT_NE(first_function().find("100.0% inner"), std::string::npos);
  // `f` walks the threads, busiest first, then back to all.
  EXPECT_EQ(next_thread(w, std::nullopt), 2u);
  EXPECT_EQ(next_thread(w, 2u), 1u);
  EXPECT_EQ(next_thread(w, 1u), std::nullopt);
}

// A terminal-like display that keeps what it was shown and types the keys given.
class FakeDisplay : public Display {
 public:
  explicit FakeDisplay(std::vector<std::string>* shown, std::vector<int>* keys) : shown_(shown), keys_(keys) {}
  Screen size() const override { return {80, 24}; }
  void show(const std::vector<std::string>& lines) override { *shown_ = lines; }
  int key_fd() const override { return 0; }  // as a terminal's: never read here
  std::vector<int> keys() override { return std::exchange(*keys_, {}); }
  std::string last_warning() const override { return {}; }

 private:
  std::vector<std::string>* shown_;
  std::vector<int>* keys_;
};

TEST_F(TopFeed, KeysPauseSwitchSpanAndQuit) {
  std::vector<std::string> shown;
  std::vector<int> keys;
  LiveView view(
      feed_, [] { return 0; }, "t", std::chrono::milliseconds(100), std::make_unique<FakeDisplay>(&shown, &keys));
  ASSERT_FALSE(shown.empty()) << "drawn at once, before the first refresh";
  keys = {'p'};
  EXPECT_TRUE(view.on_keys());
  EXPECT_TRUE(view.state().paused);
  EXPECT_NE(shown.front().find("PAUSED"), std::string::npos);
  keys = {'i', 't', 'n'};
  EXPECT_TRUE(view.on_keys());
  EXPECT_TRUE(view.state().since_start);
  EXPECT_EQ(view.state().sort, ViewState::Sort::Total);
  EXPECT_TRUE(view.state().threads_by_name);
  EXPECT_NE(shown.front().find("since start"), std::string::npos);
  keys = {'q'};
  EXPECT_FALSE(view.on_keys());
}

}  // namespace
}  // namespace pyebpf::live
