// SPDX-License-Identifier: Apache-2.0
// pprof and HTML flame graphs end to end: real runs on workloads with known
// ground truth, the files read by their real consumers — `go tool pprof`
// (Debian's golang-go) and the page in headless Chromium — and judged against
// the folded files and the events pyebpf printed at the same time.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "harness.hpp"

namespace pyebpf::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// `go tool pprof ARGS...`, which must succeed.
std::string pprof(const std::vector<std::string>& args) {
  RunResult r = run_program(std::vector<std::string>{"go", "tool", "pprof"} + args, 120s);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

// `go tool pprof -raw`: the sum of each sample value column, and the period.
struct Raw {
  std::vector<long long> totals;
  long long period = 0;
  std::size_t samples = 0;
};
Raw raw(const std::vector<std::string>& args) {
  Raw out;
  bool in_samples = false;
  std::regex value_line(R"(^\s+(-?\d+(?:\s+-?\d+)*):\s)");
  for (const auto& line : split(pprof(std::vector<std::string>{"-raw"} + args), '\n')) {
    if (line.rfind("Period: ", 0) == 0) out.period = std::stoll(line.substr(8));
    if (line == "Samples:") in_samples = true;
    if (line.rfind("Locations", 0) == 0) in_samples = false;
    std::smatch m;
    if (!in_samples || !std::regex_search(line, m, value_line)) continue;
    std::stringstream values(m[1].str());
    long long v;
    for (std::size_t i = 0; values >> v; ++i) {
      if (out.totals.size() <= i) out.totals.resize(i + 1);
      out.totals[i] += v;
    }
    ++out.samples;
  }
  return out;
}

// A folded file: stack -> weight.
std::map<std::string, long long> folded(const std::string& path) {
  std::map<std::string, long long> out;
  for (const auto& line : split(slurp(path), '\n')) {
    auto space = line.rfind(' ');
    if (space != std::string::npos) out[line.substr(0, space)] += std::stoll(line.substr(space + 1));
  }
  return out;
}

long long total(const std::map<std::string, long long>& stacks) {
  long long t = 0;
  for (const auto& [s, w] : stacks) t += w;
  return t;
}

// The rows of `go tool pprof -top`: function -> (flat, cum) in the unit shown.
std::map<std::string, std::pair<double, double>> top_rows(const std::string& text) {
  std::map<std::string, std::pair<double, double>> rows;
  std::regex row(R"(^\s*([\d.]+)\w*\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)\w*\s+[\d.]+%\s+(.+)$)");
  for (const auto& line : split(text, '\n')) {
    std::smatch m;
    if (std::regex_match(line, m, row)) rows[m[3].str()] = {std::stod(m[1].str()), std::stod(m[2].str())};
  }
  return rows;
}

// The first function row of `go tool pprof -top`.
std::string first_top_row(const std::string& text) {
  std::regex row(R"(^\s*[\d.]+\w*\s+[\d.]+%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+)$)");
  for (const auto& line : split(text, '\n')) {
    std::smatch m;
    if (std::regex_match(line, m, row)) return m[1].str();
  }
  return {};
}

// `go tool pprof` output from "Showing nodes" on: what does not name the file.
std::string body(const std::string& text) {
  auto at = text.find("Showing nodes");
  return at == std::string::npos ? text : text.substr(at);
}

TEST(FlameGraphFilesE2E, PprofCpuMatchesFoldedAndNamesTheHottestFunctions) {
  TempDir tmp;
  const std::string prof = tmp / "cpu.pb.gz", fold = tmp / "cpu.folded";
  Workload workload(python_3_11(), "cpu_shares.py", {"3"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack", "--pystack-frequency",
                 "499", "--pprof", prof, "--folded", fold});
  pyebpf.wait_ready();
  workload.go();
  Json truth = workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  EXPECT_NE(pyebpf.stderr_text().find(prof + " (CPU, "), std::string::npos) << pyebpf.stderr_text();

  // -raw: as many samples as the folded file counts; each worth one period.
  Raw r = raw({prof});
  const long long samples = total(folded(fold));
  ASSERT_GT(samples, 500) << "too few samples to judge";
  ASSERT_EQ(r.totals.size(), 2u);
  EXPECT_EQ(r.totals[0], samples);
  EXPECT_EQ(r.period, std::llround(1e9 / 499));
  EXPECT_NEAR(r.totals[1], samples * 1e9 / 499, r.samples);  // rounded per sample

  // -top: all CPU is burnt in burn_cpu (flat), called by func_a/b/c in the
  // shares the workload measured (cum), func_a the hottest.
  EXPECT_EQ(first_top_row(pprof({"-top", "-sample_index=samples", prof})), "burn_cpu");
  auto rows = top_rows(pprof({"-top", "-cum", "-sample_index=samples", "-nodecount=100", prof}));
  double sum = 0;
  for (const char* f : {"func_a", "func_b", "func_c"}) {
    ASSERT_TRUE(rows.count(f)) << f;
    sum += rows[f].second;
  }
  for (const auto& [name, share] : truth.at("shares").items())
    EXPECT_NEAR(rows[name].second / sum, share.get<double>(), 0.05) << name;
  EXPECT_GT(rows["func_a"].second, rows["func_b"].second);
  EXPECT_GT(rows["func_b"].second, rows["func_c"].second);
}

TEST(FlameGraphFilesE2E, PprofTracesShowExecutingLines) {
  TempDir tmp;
  const std::string prof = tmp / "cpu.pb.gz";
  Workload workload(python_3_11(), "known_lines.py", {"1.5"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack", "--pprof", prof});
  pyebpf.wait_ready();
  workload.go();
  Json truth = workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  const std::string file = truth.at("file"), traces = pprof({"-traces", "-lines", prof});
  const auto& lines = truth.at("lines");
  // Leaf first, each frame at the line it was executing.
  std::string chain = "inner " + file + ":" + std::to_string(lines.at("spin").get<int>()) + "\n" + "\\s+middle " +
                      file + ":" + std::to_string(lines.at("call_inner").get<int>()) + "\n" + "\\s+outer " + file +
                      ":" + std::to_string(lines.at("call_middle").get<int>()) + "\n";
  EXPECT_TRUE(std::regex_search(traces, std::regex(chain))) << chain << "\nin:\n" << traces.substr(0, 3000);
  // Each function starts at its def line (-raw: "name file:line s=start").
  const std::string locations = pprof({"-raw", prof});
  for (const auto& [function, first] : truth.at("first_lines").items()) {
    std::regex located(function + " " + file + ":\\d+ s=" + std::to_string(first.get<int>()) + "\n");
    EXPECT_TRUE(std::regex_search(locations, located)) << function << " s=" << first << "\nin:\n" << locations;
  }
}

// The page checked in Chromium (tests/viewer/check_flamegraph.mjs).
Json check_page(const std::string& page, const std::string& screenshot, const std::string& query) {
  std::string dir = std::string(PYEBPF_SOURCE_DIR) + "/tests/viewer";
  if (!fs::exists(dir + "/node_modules/playwright-core"))
    ADD_FAILURE() << "the viewer is not installed: tools/test runs `npm ci --prefix tests/viewer`";
  RunResult r = run_program({"node", dir + "/check_flamegraph.mjs", page, screenshot, query}, 120s);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  auto doc = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return doc.is_discarded() ? Json::object() : doc;
}

TEST(FlameGraphFilesE2E, PprofTimeKindsMatchTheirFoldedFiles) {
  TempDir tmp;
  const std::string prof = tmp / "prof.pb.gz", fold = tmp / "prof.folded", page = tmp / "flame.html";
  Workload workload(python_3_11(), "gil_waits.py", {"40", "0.01", "2"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack", "gil", "offcpu",
                 "--offcpu-min-total-ms", "1", "--pprof", prof, "--folded", fold, "--flamegraph", page});
  pyebpf.wait_ready();
  workload.go();
  workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  for (const char* kind : {"off_cpu", "gil_wait"}) {
    SCOPED_TRACE(kind);
    const std::string p = tmp / ("prof.pb." + std::string(kind) + ".gz");
    const std::string f = tmp / ("prof." + std::string(kind) + ".folded");
    ASSERT_TRUE(fs::exists(p) && fs::exists(f));
    auto stacks = folded(f);
    ASSERT_FALSE(stacks.empty());
    Raw r = raw({p});
    ASSERT_EQ(r.totals.size(), 1u);
    // Folded files hold µs rounded per line, pprof ns rounded per sample.
    EXPECT_NEAR(r.totals[0] / 1000.0, total(stacks), stacks.size() + r.samples) << kind;
    EXPECT_NE(pprof({"-top", p}).find(std::string("Type: ") + kind), std::string::npos);
  }
  // Off-CPU stacks end in kernel functions: the scheduler is a leaf. The
  // waits (sleep, GIL) were entered through the C library: its frames are
  // functions in its own mapping.
  EXPECT_TRUE(std::regex_search(pprof({"-traces", tmp / "prof.pb.off_cpu.gz"}), std::regex(R"(\s(__)?schedule\n)")));
  EXPECT_NE(pprof({"-raw", tmp / "prof.pb.off_cpu.gz"}).find("libc.so.6"), std::string::npos);

  // The page: one graph per kind, each as heavy as its folded file.
  Json shown = check_page(page, tmp / "kinds.png", "sleep");
  EXPECT_EQ(shown.value("errors", Json::array()), Json::array());
  ASSERT_EQ(shown["graphs"].size(), 3u);
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"CPU", "prof.folded"}, {"GIL wait", "prof.gil_wait.folded"}, {"off-CPU", "prof.off_cpu.folded"}};
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const Json& g = shown["graphs"][i];
    const auto& [name, file] = kinds[i];
    EXPECT_EQ(g["heading"].get<std::string>().rfind(name + ": ", 0), 0u) << g["heading"];
    auto stacks = folded(tmp / file);
    const double scale = i == 0 ? 1 : 1000;  // folded: samples, or µs; the page: samples, or ms
    EXPECT_NEAR(g["root_value"].get<double>() * scale, total(stacks), stacks.size()) << name;
  }
}

TEST(FlameGraphFilesE2E, ThreadLabelsFilterStoredRunsConvertAndThePageShowsTheFoldedCounts) {
  TempDir tmp;
  const std::string db = tmp / "run.db", prof = tmp / "cpu.pb.gz", fold = tmp / "cpu.folded", page = tmp / "flame.html";
  Workload workload(python_3_11(), "named_threads.py", {"3", "Alpha", "Beta"});
  Pyebpf pyebpf({"-p", std::to_string(workload.pid()), "-e", "e2e", "--enable", "py_stack", "--pystack-frequency",
                 "199", "--sqlite", db, "--pprof", prof, "--folded", fold, "--flamegraph", page, "--also-stdout"});
  pyebpf.wait_ready();
  workload.go();
  Json truth = workload.result();
  pyebpf.stop();
  ASSERT_EQ(pyebpf.exit_status(), 0) << pyebpf.stderr_text();
  auto events = pyebpf.events("py_stack");
  std::map<std::string, long long> by_thread;
  std::map<long, long long> by_tid;
  for (const auto& e : events) {
    ++by_thread[e.at("thread_name").get<std::string>()];
    ++by_tid[e.at("tid").get<long>()];
  }
  ASSERT_GT(by_thread["Alpha"], 100);

  // Labels filter: -tagfocus keeps one thread's samples, or one env's.
  EXPECT_EQ(raw({"-tagfocus=thread_name=Alpha", prof}).totals.at(0), by_thread["Alpha"]);
  EXPECT_EQ(raw({"-tagfocus=thread_name=Beta", prof}).totals.at(0), by_thread["Beta"]);
  EXPECT_EQ(raw({"-tagfocus=env=e2e", prof}).totals.at(0), static_cast<long long>(events.size()));
  EXPECT_NE(pprof({"-tags", prof}).find("thread_name: "), std::string::npos);

  // `pyebpf report` converts the stored run into the same profiles: from
  // SQLite (the run's own sample rate), and from saved JSON lines.
  const std::string prof2 = tmp / "stored.pb.gz", fold2 = tmp / "stored.folded";
  RunResult conv = run_pyebpf({"report", db, "--pprof", prof2, "--folded", fold2});
  ASSERT_EQ(conv.status, 0) << conv.err;
  EXPECT_NE(conv.err.find(prof2 + " (CPU, " + std::to_string(events.size()) + " events)"), std::string::npos)
      << conv.err;
  EXPECT_EQ(folded(fold2), folded(fold));
  Raw live = raw({prof}), stored = raw({prof2});
  EXPECT_EQ(stored.totals, live.totals);
  EXPECT_EQ(stored.period, live.period);
  EXPECT_EQ(body(pprof({"-top", "-nodecount=50", prof2})), body(pprof({"-top", "-nodecount=50", prof})));
  const std::string jsonl = tmp / "run.jsonl", prof3 = tmp / "lines.pb.gz";
  {
    std::ofstream f(jsonl);
    for (const auto& e : pyebpf.events()) f << e.dump() << "\n";
  }
  conv = run_pyebpf({"--pystack-frequency", "199", "report", jsonl, "--pprof", prof3});
  ASSERT_EQ(conv.status, 0) << conv.err;
  EXPECT_EQ(raw({prof3}).totals, live.totals);

  // The page in Chromium: no error, no request; the root's children are as
  // wide as their folded counts; search sums; a click zooms; a thread shows alone.
  fs::path artifacts = PYEBPF_ARTIFACTS_DIR;
  fs::create_directories(artifacts);
  Json shown = check_page(page, artifacts / "flamegraph.png", "burn_cpu");
  EXPECT_EQ(shown.value("errors", Json::array()), Json::array());
  EXPECT_EQ(shown.value("requests", Json::array()), Json::array());
  ASSERT_EQ(shown["graphs"].size(), 1u) << "CPU only";
  const Json& g = shown["graphs"][0];
  std::map<std::string, long long> by_root;
  long long matched = 0;
  for (const auto& [stack, n] : folded(fold)) {
    by_root[stack.substr(0, stack.find(';'))] += n;
    if (stack.find("burn_cpu") != std::string::npos) matched += n;
  }
  EXPECT_EQ(g["root_value"].get<long long>(), static_cast<long long>(events.size()));
  std::map<std::string, long long> drawn;
  for (const auto& c : g["children"]) {
    drawn[c["label"]] = c["value"].get<long long>();
    EXPECT_NEAR(c["width"].get<double>(), g["root_width"].get<double>() * c["value"].get<double>() / events.size(), 1.5)
        << c;
  }
  for (const auto& [root, n] : by_root) {
    if (n * 1000 >= static_cast<long long>(events.size())) {  // wide enough to be drawn
      EXPECT_EQ(drawn[root], n) << root;
    }
  }
  EXPECT_EQ(shown["search"]["weight"].get<long long>(), matched);
  EXPECT_GT(shown["search"]["highlighted"].get<int>(), 0);
  EXPECT_NE(shown["tooltip"].get<std::string>().find("% of CPU"), std::string::npos) << shown["tooltip"];
  EXPECT_NE(shown["tooltip"].get<std::string>().find("samples"), std::string::npos) << shown["tooltip"];
  const Json& zoom = shown["zoom"];
  ASSERT_TRUE(zoom.is_object()) << "no frame narrower than 90% to click";
  EXPECT_LT(zoom["before_width"].get<double>(), 0.9 * zoom["flame_width"].get<double>()) << zoom;
  EXPECT_NEAR(zoom["after_width"].get<double>(), zoom["flame_width"].get<double>(), 1.5) << zoom;
  EXPECT_EQ(zoom["ancestors"], zoom["depth"]) << "the path from the root stays above the zoomed frame";
  std::smatch m;
  std::string option = shown["thread"]["option"];
  ASSERT_TRUE(std::regex_search(option, m, std::regex(R"(tid (\d+))"))) << option;
  EXPECT_EQ(shown["thread"]["root_value"].get<long long>(), by_tid[std::stol(m[1].str())]) << option;
  EXPECT_TRUE(fs::exists(artifacts / "flamegraph.png"));
}

TEST(FlameGraphFilesE2E, PageCheckSeesErrorsAndRequests) {
  // The Chromium check must be able to fail: a page that logs an error and
  // fetches from the network is reported with both.
  TempDir tmp;
  const std::string page = tmp / "bad.html";
  std::ofstream(page) << "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\">"
                         "<script>console.error('boom')</script></body></html>";
  RunResult r = run_program(
      {"node", std::string(PYEBPF_SOURCE_DIR) + "/tests/viewer/check_flamegraph.mjs", page, tmp / "bad.png", "x"},
      120s);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  auto doc = Json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  EXPECT_NE(doc["errors"].dump().find("boom"), std::string::npos) << doc;
  EXPECT_NE(doc["requests"].dump().find("127.0.0.1:9"), std::string::npos) << doc;
}

}  // namespace
}  // namespace pyebpf::e2e
