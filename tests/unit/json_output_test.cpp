// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {
namespace {

TEST(JsonOutputTest, OneLineKeysInInsertionOrder) {
  Event e;
  e["metric"] = "py_stack";
  e["env"] = "prod";
  e["ts_us"] = 1795968595541716;
  e["stack"] = "a (f.py:1);b (f.py:2)";
  e["truncated"] = false;
  const std::string expected =
      R"json({"metric":"py_stack","env":"prod","ts_us":1795968595541716,"stack":"a (f.py:1);b (f.py:2)","truncated":false})json";
  EXPECT_EQ(to_json_line(e), expected);
}

TEST(JsonOutputTest, NonAsciiStaysReadableAndInvalidBytesAreReplaced) {
  Event e;
  e["name"] = "計算する";
  e["bad"] = std::string("x\xffy");
  e["quote"] = "say \"hi\"\n";
  std::string line = to_json_line(e);
  EXPECT_EQ(line, "{\"name\":\"計算する\",\"bad\":\"x\xef\xbf\xbdy\",\"quote\":\"say \\\"hi\\\"\\n\"}");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_TRUE(nlohmann::json::accept(line));
}

}  // namespace
}  // namespace pyebpf::sinks
