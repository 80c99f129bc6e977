// SPDX-License-Identifier: Apache-2.0
// gc tracker logic that needs nothing installed: flags, decoding, totals,
// the GC state check against offsets rows (tests/host: hook selection on
// this machine's interpreters).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "binary/elf_file.hpp"
#include "btf_layout.hpp"
#include "gc.skel.h"
#include "interval_stats_support.hpp"
#include "pyebpf/error.hpp"
#include "python/offsets.hpp"
#include "row_names.hpp"
#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/gc/gc.hpp"
#include "trackers/gc/gc_counters.hpp"
#include "trackers/gc/gc_events.hpp"

namespace pyebpf::trackers {
namespace {

using Kind = GcHookPlan::Kind;

TEST(GcHooks, CollectorNameFollowsTheRename) {
  EXPECT_EQ(gc_collector_name({3, 8, 18}), "collect");
  EXPECT_EQ(gc_collector_name({3, 9, 18}), "collect");
  EXPECT_EQ(gc_collector_name({3, 10, 0}), "gc_collect_main");
  EXPECT_EQ(gc_collector_name({3, 13, 0}), "gc_collect_main");
}

TEST(GcHooks, ParsesTheHookFlag) {
  EXPECT_EQ(parse_gc_hook("auto"), GcHookChoice::Auto);
  EXPECT_EQ(parse_gc_hook("usdt"), GcHookChoice::Usdt);
  EXPECT_EQ(parse_gc_hook("uprobe"), GcHookChoice::Uprobe);
  EXPECT_EQ(parse_gc_hook("kprobe"), std::nullopt);
}

// The CLI checks the choices; a tracker built from other options must not
// fall back to auto silently.
TEST(GcTrackerOptions, AnUnknownChoiceIsAnErrorNotAFallback) {
  GcOptions options;
  options.pauses = "sometimes";
  EXPECT_THROW(GcTracker{options}, Error);
  options.pauses = "on";
  options.hook = "kprobe";
  EXPECT_THROW(GcTracker{options}, Error);
  options.hook = "usdt";
  EXPECT_NO_THROW(GcTracker{options});
}

// --- decoding ----------------------------------------------------------------

using Json = nlohmann::ordered_json;

struct GcDecoding : ::testing::Test {
  test::DecoderFixture f;
  sinks::CaptureSink sink;
  sinks::Record record{gc_pause_schema()};
  std::unique_ptr<pyebpf_gc_event> ev = std::make_unique<pyebpf_gc_event>();

  void SetUp() override {
    f.targets.python(200).add(0x10, "collect_now", "/srv/jobs.py", 5);
    ev->hdr = test::header(200, 201, 2'000'000'000);
    ev->end_ns = 2'000'000'000 + 12'345'678;
    ev->collected = 42;
    ev->uncollectable = 0;
    ev->generation = 2;
    ev->hook = PYEBPF_GC_HOOK_USDT;
    test::fill_stack(ev->stack, {{0x10, 1}});
  }
  Decoded decode(bool py_stack, std::size_t bytes = 0) {
    Decoded d =
        decode_gc_pause(ev.get(), bytes ? bytes : PYEBPF_GC_EVENT_BYTES(ev->stack.depth), f.ctx(), py_stack, record);
    if (d == Decoded::Event) sink.write(record);
    return d;
  }
};

TEST_F(GcDecoding, OneCollectionIsOneEvent) {
  ASSERT_EQ(decode(true), Decoded::Event);
  const std::int64_t start = f.clock.epoch_us(2'000'000'000), end = f.clock.epoch_us(ev->end_ns);
  EXPECT_EQ(test::keys_of(sink.records[0]),
            (std::vector<std::string>{"metric", "env", "ts", "ts_us", "pid", "tid", "container_pid", "container_tid",
                                      "comm", "thread_name", "start_time", "end_time", "duration_ms", "generation",
                                      "collected", "uncollectable", "py_stack", "py_stack_depth"}));
  Json e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["start_time"], iso8601_utc(start));
  EXPECT_EQ(e["end_time"], iso8601_utc(end));
  EXPECT_EQ(e["duration_ms"], 12.346);  // microsecond resolution, like every *_ms field
  EXPECT_EQ(e["generation"], 2);
  EXPECT_EQ(e["collected"], 42);
  EXPECT_EQ(e["py_stack"], "collect_now (/srv/jobs.py:6)");
  EXPECT_EQ(e["py_stack_depth"], 1);
}

TEST_F(GcDecoding, WhatTheHookCouldNotSeeIsLeftOut) {
  ev->generation = -1;
  ev->flags = PYEBPF_GC_F_NO_STATS | PYEBPF_GC_F_NESTED;
  ev->stack.truncated = 1;
  ev->stack.status = PYEBPF_STACK_READ_FAULT;
  ASSERT_EQ(decode(true), Decoded::Event);
  Json e = test::json_of(sink.records[0]);
  EXPECT_FALSE(e.contains("generation"));
  EXPECT_FALSE(e.contains("collected"));
  EXPECT_FALSE(e.contains("uncollectable"));
  EXPECT_EQ(e["nested"], true);
  EXPECT_EQ(e["py_stack_truncated"], true);
  EXPECT_EQ(e["py_stack_partial"], true);
  // --gc-py-enable false: no stack fields at all.
  ASSERT_EQ(decode(false), Decoded::Event);
  Json bare = test::json_of(sink.records[1]);
  EXPECT_FALSE(bare.contains("py_stack"));
  EXPECT_FALSE(bare.contains("py_stack_depth"));
  EXPECT_FALSE(bare.contains("py_stack_truncated"));
}

// --- gc_stats: interval totals from the per-CPU running totals ----------------

// One CPU's running totals: `durations_us` pauses of one generation, the
// longest in the slot of interval `epoch`.
pyebpf_gc_stats cpu_totals(std::initializer_list<std::uint64_t> durations_us, std::uint32_t epoch) {
  pyebpf_gc_stats s{};
  s.pauses = test::cpu_durations(durations_us, epoch);
  s.count = s.pauses.count;
  s.collected = 10 * static_cast<std::int64_t>(s.count);
  return s;
}

TEST(GcTotals, IntervalsAreDifferencesAndTheirSumIsExact) {
  GcTotals first;
  first.add(cpu_totals({10, 20, 30}, 0), 0);
  first.add(cpu_totals({40}, 0), 0);
  EXPECT_EQ(first.count, 4u);
  EXPECT_EQ(first.pauses.total_ns, 100'000u);
  EXPECT_EQ(first.collected, 40);
  EXPECT_EQ(first.pauses.max_ns, 40'000u);

  // Interval 1: CPU 0 gains a 5 ms pause; CPU 1 nothing, its max slot is
  // interval 0's and must not count.
  GcTotals second;
  second.add(cpu_totals({10, 20, 30, 5000}, 1), 1);
  second.add(cpu_totals({40}, 0), 1);
  GcTotals d = second.since(first);
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.pauses.total_ns, 5'000'000u);
  EXPECT_EQ(d.collected, 10);
  EXPECT_EQ(d.pauses.max_ns, 5'000'000u);
  std::uint64_t in_hist = 0;
  for (auto n : d.pauses.hist) in_hist += n;
  EXPECT_EQ(in_hist, 1u);
}

TEST(GcTotals, RecordHasExactCountsAndPercentilesWithinTheBuckets) {
  GcTotals t;
  pyebpf_gc_stats cpu = cpu_totals({}, 3);
  for (int i = 0; i < 99; ++i) {
    ++cpu.count;
    ++cpu.pauses.count;
    cpu.pauses.total_ns += 100'000;
    ++cpu.pauses.hist[pyebpf_latency_bucket(100)];
  }
  ++cpu.count;
  ++cpu.pauses.count;
  cpu.pauses.total_ns += 7'000'000;
  ++cpu.pauses.hist[pyebpf_latency_bucket(7000)];
  cpu.pauses.max_ns[1] = 7'000'000;
  cpu.collected = 1234;
  cpu.uncollectable = 2;
  t.add(cpu, 3);
  test::DecoderFixture f;
  sinks::Record r{gc_stats_schema()};
  set_thread_fields(r, f.ctx(), test::header(200, 200, 2'000'000'000));
  fill_gc_stats(t, 100, std::nullopt, 0, 10.0, r);
  sinks::CaptureSink sink;
  sink.write(r);
  Json e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["metric"], "gc_stats");
  EXPECT_EQ(e["generation"], 0);
  EXPECT_EQ(e["count"], 100);
  EXPECT_EQ(e["timed"], 100);
  EXPECT_EQ(e["total_ms"], 16.9);
  EXPECT_EQ(e["max_ms"], 7.0);
  EXPECT_EQ(e["collected"], 1234);
  EXPECT_EQ(e["uncollectable"], 2);
  BucketRange b100 = latency_bucket_range(pyebpf_latency_bucket(100));
  EXPECT_GE(e["p50_ms"].get<double>(), b100.low_us / 1000);
  EXPECT_LE(e["p50_ms"].get<double>(), b100.high_us / 1000);
  EXPECT_LE(e["p99_ms"].get<double>(), b100.high_us / 1000);  // rank 99 of 100 is still a 100 us pause
  ASSERT_EQ(e["histogram"].size(), 2u);
  EXPECT_EQ(e["histogram"][0][2], 99);
  EXPECT_EQ(e["histogram"][1][2], 1);
  // No generation: the field is left out.
  r.clear();
  set_thread_fields(r, f.ctx(), test::header(200, 200, 2'000'000'000));
  fill_gc_stats(t, 100, std::nullopt, -1, 10.0, r);
  sink.write(r);
  EXPECT_FALSE(test::json_of(sink.records[1]).contains("generation"));
}

// Collections counted from the interpreter's counters and not timed one by
// one: no percentiles, no total unless the interpreter timed them itself.
TEST(GcTotals, UntimedRecordHasCountsAndOnlyTheInterpretersOwnTotal) {
  GcTotals t;
  t.count = 1500;
  t.collected = 10;
  test::DecoderFixture f;
  sinks::CaptureSink sink;
  for (std::optional<double> duration : {std::optional<double>{}, std::optional<double>{42.5}}) {
    sinks::Record r{gc_stats_schema()};
    set_thread_fields(r, f.ctx(), test::header(200, 200, 2'000'000'000));
    fill_gc_stats(t, 0, duration, 1, 1.0, r);
    sink.write(r);
  }
  for (const auto& record : sink.records) {
    Json e = test::json_of(record);
    EXPECT_EQ(e["count"], 1500);
    EXPECT_EQ(e["timed"], 0);
    EXPECT_EQ(e["collected"], 10);
    EXPECT_FALSE(e.contains("p50_ms") || e.contains("p99_ms") || e.contains("max_ms")) << e.dump();
    EXPECT_TRUE(e["histogram"].empty());
  }
  EXPECT_FALSE(test::json_of(sink.records[0]).contains("total_ms"));
  EXPECT_EQ(test::json_of(sink.records[1])["total_ms"], 42.5);
}

TEST(GcCpu, ShareIsTheCollectingSamplesOfTheTargetsSamples) {
  test::DecoderFixture f;
  sinks::Record r{gc_cpu_schema()};
  set_thread_fields(r, f.ctx(), test::header(200, 200, 2'000'000'000));
  fill_gc_cpu(400, 30, 99, 10.0, r);
  sinks::CaptureSink sink;
  sink.write(r);
  Json e = test::json_of(sink.records[0]);
  EXPECT_EQ(e["metric"], "gc_cpu");
  EXPECT_EQ(e["samples"], 400);
  EXPECT_EQ(e["gc_samples"], 30);
  EXPECT_EQ(e["gc_percent"], 7.5);
  EXPECT_NEAR(e["gc_cpu_ms"].get<double>(), 303.03, 0.01);  // 30 periods of 1/99 s
}

TEST(GcCounters, DeltaHasTheInterpretersDurationOnlyWhereBothReadingsHaveIt) {
  GcReading before, after;
  before.gen[2] = {5, 100, 1};
  after.gen[2] = {7, 130, 1};
  GcGenerationDelta d = gc_delta(after, before, 2);
  EXPECT_EQ(d.collections, 2);
  EXPECT_EQ(d.collected, 30);
  EXPECT_EQ(d.uncollectable, 0);
  EXPECT_FALSE(d.duration_ms);
  before.timed = after.timed = true;
  before.duration_s[2] = 0.25;
  after.duration_s[2] = 0.2625;
  d = gc_delta(after, before, 2);
  ASSERT_TRUE(d.duration_ms);
  EXPECT_NEAR(*d.duration_ms, 12.5, 1e-9);
}

TEST_F(GcDecoding, ShortRecordsAndForgottenTargetsWriteNothing) {
  EXPECT_EQ(decode(true, PYEBPF_GC_EVENT_BYTES(0) - 1), Decoded::Malformed);
  ev->hdr.pid = 999;
  EXPECT_EQ(decode(true), Decoded::Skipped);
  EXPECT_TRUE(sink.records.empty());
}

TEST(GcFlags, DefaultsAndValues) {
  auto o = test::parse_args({});
  ASSERT_TRUE(o);
  const auto& gc = test::tracker_options<GcOptions>(*o, "gc");
  EXPECT_EQ(gc.min_ms, 1.0);
  EXPECT_EQ(gc.stats_interval_s, 10.0);
  EXPECT_TRUE(gc.py_enable);
  EXPECT_EQ(gc.hook, "auto");
  EXPECT_EQ(gc.pauses, "auto");
  EXPECT_EQ(gc.pauses_max_rate, 200);
  EXPECT_EQ(gc.sample_hz, 99u);
  auto modes = test::parse_args({"--gc-pauses", "off", "--gc-pauses-max-rate", "50", "--gc-sample-hz", "0"});
  ASSERT_TRUE(modes);
  const auto& m = test::tracker_options<GcOptions>(*modes, "gc");
  EXPECT_EQ(m.pauses, "off");
  EXPECT_EQ(m.pauses_max_rate, 50);
  EXPECT_EQ(m.sample_hz, 0u);
  EXPECT_FALSE(test::parse_args({"--gc-pauses", "sometimes"}));
  EXPECT_FALSE(test::parse_args({"--gc-pauses-max-rate", "-3"}));
  auto set =
      test::parse_args({"--gc-min-ms", "2.5", "--no-gc-py-enable", "--gc-hook", "uprobe", "--gc-stats-interval", "3"});
  ASSERT_TRUE(set);
  const auto& g = test::tracker_options<GcOptions>(*set, "gc");
  EXPECT_EQ(g.min_ms, 2.5);
  EXPECT_EQ(g.stats_interval_s, 3.0);
  EXPECT_FALSE(g.py_enable);
  EXPECT_EQ(g.hook, "uprobe");
  EXPECT_FALSE(test::parse_args({"--gc-min-ms", "-1"}));
  EXPECT_FALSE(test::parse_args({"--gc-hook", "kprobe"}));
  EXPECT_FALSE(test::parse_args({"--gc-stats-interval", "0"}));
}

TEST(GcStructs, MatchTheEmbeddedObject) {
  std::size_t size = 0;
  const void* bytes = gc_bpf__elf_bytes(&size);
  test::EmbeddedObject obj(bytes, size);
  const btf* t = obj.types();
  ASSERT_TRUE(t);

  EXPECT_SAME_SIZE(t, pyebpf_gc_event);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, end_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, uncollectable);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, generation);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, hook);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, flags);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_event, stack);
  EXPECT_EQ(static_cast<long>(offsetof(pyebpf_gc_event, stack)), static_cast<long>(PYEBPF_GC_EVENT_FIXED));

  EXPECT_SAME_SIZE(t, pyebpf_gc_proc);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gcstate);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, tstate_interp);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, interp_gc);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, stats_pointer);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, totals_bytes);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, entry_size);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, collections);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, uncollectable);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gen);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gil);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, collecting);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gil_locked);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_proc, gil_holder);

  EXPECT_SAME_SIZE(t, pyebpf_gc_samples);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_samples, samples);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_samples, collecting);

  EXPECT_SAME_SIZE(t, pyebpf_gc_gen);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen, base);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen, index);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen, length);

  EXPECT_SAME_SIZE(t, pyebpf_gc_stats_key);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_stats_key, generation);
  EXPECT_SAME_SIZE(t, pyebpf_gc_stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_stats, count);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_stats, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_stats, uncollectable);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_stats, pauses);
  EXPECT_SAME_SIZE(t, pyebpf_interval_stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_interval_stats, count);
  EXPECT_SAME_LAYOUT(t, pyebpf_interval_stats, total_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_interval_stats, max_ns);
  EXPECT_SAME_LAYOUT(t, pyebpf_interval_stats, max_epoch);
  EXPECT_SAME_LAYOUT(t, pyebpf_interval_stats, hist);

  EXPECT_SAME_SIZE(t, pyebpf_gc_gen_stats);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen_stats, collected);
  EXPECT_SAME_LAYOUT(t, pyebpf_gc_gen_stats, uncollectable);
}

// The GC state checks, on a GC state laid out in this process's memory the
// way a row says (read back through process_vm_readv, as from a target).
class GcStateCheck : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    row = python::embedded_row(GetParam());
    ASSERT_EQ(row.label, GetParam());
    state.assign(*row.size("struct _gc_runtime_state"), 0);
    cfg = gc_totals_layout(row);
    cfg.gcstate = addr(state);
    const std::uint64_t generations = cfg.gcstate + row.require("gc.generations");
    for (int g = 0; g < PYEBPF_GC_GENERATIONS; ++g) {  // empty lists point at themselves
      std::uint64_t head = generations + g * *row.size("struct gc_generation");
      put(state, head - cfg.gcstate, head);
      put(state, head - cfg.gcstate + 8, head);
    }
    put(state, row.require("gc.generation0"), generations);
    if (cfg.stats_pointer) {
      rings.assign(*row.size("struct gc_stats"), 0);
      put(state, cfg.stats, addr(rings));
    }
    // Generation 1 collected twice, 7 objects found.
    totals_at(1)[0] = 2;
    totals_at(1)[1] = 7;
  }
  static std::uint64_t addr(std::vector<std::uint8_t>& v) { return reinterpret_cast<std::uint64_t>(v.data()); }
  static void put(std::vector<std::uint8_t>& v, std::uint64_t at, std::uint64_t value) {
    std::memcpy(v.data() + at, &value, 8);
  }
  // {collections, collected, uncollectable} of generation g's newest entry.
  std::int64_t* totals_at(int g) {
    std::uint8_t* base = cfg.stats_pointer ? rings.data() : state.data() + cfg.stats;
    std::uint8_t* entry = base + cfg.gen[g].base;
    if (cfg.gen[g].index != PYEBPF_NO_OFFSET) entry += entry[cfg.gen[g].index] * cfg.entry_size;
    return reinterpret_cast<std::int64_t*>(entry + cfg.collections);
  }
  std::string failure() {
    try {
      check_gc_state(row, self, cfg);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }

  python::OffsetsRow row;
  std::vector<std::uint8_t> state, rings;
  pyebpf_gc_proc cfg{};
  python::ProcessMemory self{getpid()};
};

TEST_P(GcStateCheck, AStateLaidOutAsTheRowSaysPasses) {
  EXPECT_EQ(failure(), "");
}

TEST_P(GcStateCheck, WrongGeneration0NamesTheField) {
  put(state, row.require("gc.generation0"), cfg.gcstate + row.require("gc.generations") + 4);
  EXPECT_NE(failure().find("gc.generation0"), std::string::npos) << failure();
}

TEST_P(GcStateCheck, GenerationThatIsNoListHeadNamesTheField) {
  std::uint64_t head = cfg.gcstate + row.require("gc.generations") + 2 * *row.size("struct gc_generation");
  put(state, head - cfg.gcstate, 0x10);  // a pointer to nothing readable
  EXPECT_NE(failure().find("gc.generations[2]"), std::string::npos) << failure();
}

TEST_P(GcStateCheck, ImpossibleTotalsNameWhereTheyWereRead) {
  totals_at(2)[0] = -5;
  EXPECT_NE(failure().find(cfg.stats_pointer ? "gc.stats_rings" : "gc.generation_stats"), std::string::npos)
      << failure();
}

TEST_P(GcStateCheck, AStateOfAnotherSizeIsRefused) {
  row.moved_by_target.push_back("sizeof(struct _gc_runtime_state)");
  EXPECT_NE(failure().find("sizeof(struct _gc_runtime_state)"), std::string::npos) << failure();
}

INSTANTIATE_TEST_SUITE_P(Rows, GcStateCheck, ::testing::ValuesIn(python::kRowsWithDebugOffsets),
                         [](const auto& info) { return python::row_test_name(info.param); });

// 3.15+: an index byte past its ring's end.
class GcRingCheck : public GcStateCheck {};

TEST_P(GcRingCheck, IndexPastTheRingIsRefused) {
  ASSERT_EQ(cfg.stats_pointer, 1);
  rings[cfg.gen[1].base + cfg.gen[1].index] = static_cast<std::uint8_t>(cfg.gen[1].length);
  EXPECT_NE(failure().find("generation 1 (gc.stats_rings)"), std::string::npos) << failure();
}

INSTANTIATE_TEST_SUITE_P(Rows, GcRingCheck, ::testing::Values("debian-3.15.2-1"));

TEST(GcStateCheck315, RingsOfTheYoungAndTheTwoOldGenerations) {
  python::OffsetsRow row = python::embedded_row("debian-3.15.2-1");
  ASSERT_TRUE(row.field("gc.stats_rings"));
  pyebpf_gc_proc cfg = gc_totals_layout(row);
  EXPECT_EQ(cfg.stats_pointer, 1);
  EXPECT_EQ(cfg.gen[0].length, 11);
  EXPECT_EQ(cfg.gen[1].length, 3);
  EXPECT_EQ(cfg.gen[2].base - cfg.gen[1].base, *row.size("struct gc_old_stats_buffer"));
}

// gc.bpf.c reads each collection's totals in spans (one without rings):
// every row's layout fits them, and its spans cover every generation.
TEST(GcTotalsLayout, EveryRowIsReadInSpansThatFitTheWindow) {
  for (const auto& row : python::OffsetsTable::embedded().rows()) {
    SCOPED_TRACE(row.label);
    pyebpf_gc_proc cfg{};
    ASSERT_NO_THROW(cfg = gc_totals_layout(row));
    if (cfg.stats_pointer) {
      EXPECT_EQ(cfg.totals_bytes, 0);  // rings: one entry at a time
      EXPECT_LE(cfg.entry_size, PYEBPF_GC_TOTALS_WINDOW);
      continue;
    }
    for (const auto& gen : cfg.gen) EXPECT_LE(gen.base + cfg.entry_size, cfg.totals_bytes);
    EXPECT_LE(cfg.totals_bytes, PYEBPF_GC_TOTALS_WINDOW);
  }
}

}  // namespace
}  // namespace pyebpf::trackers
