// The --flamegraph page: its data (what the page draws) and that the page is
// one self-contained file whose data no frame name can break out of. The
// page itself runs in headless Chromium in the e2e tests.
#include "sinks/flame_graph_html.hpp"

#include <gtest/gtest.h>

#include "flame_graph_support.hpp"

namespace pyebpf::sinks {
namespace {

using namespace test_flame;

FedSink fed() {
  FedSink sink;
  feed_cpu(sink);
  feed_waits(sink);
  return sink;
}

// The JSON between the data block's tags.
nlohmann::json embedded_data(const std::string& page) {
  const std::string open = R"(<script id="pyebpf-data" type="application/json">)";
  auto begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  begin += open.size();
  auto end = page.find("</script>", begin);
  return nlohmann::json::parse(page.substr(begin, end - begin));
}

TEST(FlameGraphHtml, OneGraphPerKindWithItsThreadsStacks) {
  FedSink sink = fed();
  auto data = flame_graph_html_data(sink.sink.graphs(), "my run");
  EXPECT_EQ(data["title"], "my run");
  ASSERT_EQ(data["kinds"].size(), 3u);
  const auto& cpu = data["kinds"][0];
  EXPECT_EQ(cpu["name"], "CPU");
  EXPECT_EQ(cpu["unit"], "samples");
  EXPECT_DOUBLE_EQ(cpu["ms"].get<double>(), 10.0);
  EXPECT_EQ(cpu["events"], 4);
  ASSERT_EQ(cpu["threads"].size(), 2u);
  const auto& main = cpu["threads"][0];
  EXPECT_EQ(main["name"], "Main");
  EXPECT_EQ(main["tid"], 1);
  EXPECT_DOUBLE_EQ(main["total"].get<double>(), 3);
  ASSERT_EQ(main["stacks"].size(), 1u);
  const auto& ids = main["stacks"][0][0];
  EXPECT_DOUBLE_EQ(main["stacks"][0][1].get<double>(), 3);
  const auto& frames = data["frames"];
  EXPECT_EQ(frames[ids[0].get<int>()], nlohmann::json::array({"python", "main", "a.py", 1}));
  EXPECT_EQ(frames[ids[1].get<int>()], nlohmann::json::array({"python", "work", "a.py", 5}));
  const auto& gil = data["kinds"][1];
  EXPECT_EQ(gil["name"], "GIL wait");
  const auto& gil_ids = gil["threads"][0]["stacks"][0][0];
  EXPECT_EQ(frames[gil_ids[2].get<int>()], nlohmann::json::array({"label", "GIL held by Hog", "", 0}));
  const auto& off = data["kinds"][2];
  EXPECT_EQ(off["name"], "off-CPU");
  EXPECT_EQ(off["unit"], "ms");
  const auto& off_ids = off["threads"][0]["stacks"][0][0];
  EXPECT_EQ(frames[off_ids[2].get<int>()], nlohmann::json::array({"kernel", "__x64_sys_nanosleep", "", 0}));
  EXPECT_DOUBLE_EQ(off["threads"][0]["stacks"][0][1].get<double>(), 25);
}

TEST(FlameGraphHtml, OnlyKindsWithEventsAreDrawn) {
  FedSink sink;
  feed_cpu(sink);
  auto data = flame_graph_html_data(sink.sink.graphs(), "cpu only");
  ASSERT_EQ(data["kinds"].size(), 1u);
  EXPECT_EQ(data["kinds"][0]["name"], "CPU");
}

TEST(FlameGraphHtml, PageIsSelfContainedAndCarriesTheData) {
  FedSink sink = fed();
  std::string page = flame_graph_html(sink.sink.graphs(), "my run");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("/*PYEBPF_FLAME_GRAPH_DATA*/"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos) << "no external script or image";
  EXPECT_EQ(page.find("href="), std::string::npos) << "no external style sheet";
  EXPECT_EQ(page.find("http:"), std::string::npos);
  EXPECT_EQ(page.find("https:"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos) << "the page forbids itself any fetch";
  EXPECT_EQ(embedded_data(page), flame_graph_html_data(sink.sink.graphs(), "my run"));
}

TEST(FlameGraphHtml, FrameNamesCannotEndTheDataBlock) {
  FedSink sink;
  Json e = ev("py_stack", 1, "</script><script>alert(1)</script>");
  e["stack"] = "</script><b>x (a.py:1)";
  sink.write(e);
  std::string page = flame_graph_html(sink.sink.graphs(), "</script>");
  auto data = embedded_data(page);
  EXPECT_EQ(data["title"], "</script>");
  EXPECT_EQ(data["kinds"][0]["threads"][0]["name"], "</script><script>alert(1)</script>");
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
}

}  // namespace
}  // namespace pyebpf::sinks
