// SPDX-License-Identifier: Apache-2.0
// Flag checks say the flag's range in words and show a valid example; URLs
// are checked by libcurl's parser and redacted without their credentials.
#include "util/flag_rules.hpp"

#include <gtest/gtest.h>

#include "util/http.hpp"

namespace pyebpf::flags {
namespace {

// The error line parsing `args` gives, or "" when it parses.
std::string error_of(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return describe(e);
  }
  return "";
}

TEST(FlagRules, NumbersOutsideTheirRangeNameTheRangeInWords) {
  CLI::App app;
  double seconds = 0, ms = 0, pct = 0;
  unsigned frames = 0;
  check(app.add_option("--duration", seconds), above_zero("seconds", "60"));
  check(app.add_option("--min-ms", ms), zero_or_more("ms", "5"));
  check(app.add_option("--pct", pct), between(0, 100, "%", "80"));
  check(app.add_option("--depth", frames), whole(1, 64, "frames", "20"));

  EXPECT_EQ(error_of(app, {"--duration", "-1"}), "--duration must be > 0 seconds, e.g. --duration 60 (got '-1')");
  EXPECT_EQ(error_of(app, {"--duration", "0"}), "--duration must be > 0 seconds, e.g. --duration 60 (got '0')");
  EXPECT_EQ(error_of(app, {"--duration", "1x"}), "--duration must be > 0 seconds, e.g. --duration 60 (got '1x')");
  EXPECT_EQ(error_of(app, {"--min-ms", "-0.5"}), "--min-ms must be >= 0 ms, e.g. --min-ms 5 (got '-0.5')");
  EXPECT_EQ(error_of(app, {"--pct", "101"}), "--pct must be 0 to 100 %, e.g. --pct 80 (got '101')");
  EXPECT_EQ(error_of(app, {"--depth", "2.5"}),
            "--depth must be a whole number from 1 to 64 frames, e.g. --depth 20 (got '2.5')");
  EXPECT_EQ(error_of(app, {"--depth"}), "--depth needs a value");

  // Whole numbers without an upper limit: a huge value is checked without
  // casting it (undefined for 1e30), then refused by the conversion to size_t.
  std::size_t events = 0;
  check(app.add_option("--queue", events), whole(1, 0, "events", "100000"));
  EXPECT_EQ(error_of(app, {"--queue", "2.5"}),
            "--queue must be a whole number >= 1 events, e.g. --queue 100000 (got '2.5')");
  EXPECT_EQ(error_of(app, {"--queue", "1e30"}), "Could not convert: --queue = 1e30");

  EXPECT_EQ(error_of(app, {"--duration", "0.5", "--min-ms", "0", "--pct", "100", "--depth", "64"}), "");
  EXPECT_EQ(seconds, 0.5);
  EXPECT_EQ(frames, 64u);
}

TEST(FlagRules, PidsArePositiveWholeNumbers) {
  CLI::App app;
  std::vector<int> pids;
  check_pid(app.add_option("-p,--pid", pids)->expected(1, -1));
  for (const char* bad : {"0", "-3", "abc", "12.5", "-e", "4294967296"}) {
    EXPECT_EQ(error_of(app, {"-p", bad}), std::string("-p needs a PID, e.g. -p 4242 (got '") + bad + "')");
  }
  EXPECT_EQ(error_of(app, {"-p"}), "-p needs a PID, e.g. -p 4242");
  EXPECT_EQ(error_of(app, {"-p", "1", "999999999"}), "");
}

TEST(FlagRules, UrlsNeedAnHttpSchemeAndAHost) {
  EXPECT_FALSE(http_url_problem("http://127.0.0.1:8123"));
  EXPECT_FALSE(http_url_problem("https://user:pw@clickhouse.example:8443/"));
  EXPECT_TRUE(url_has_credentials("https://user:pw@clickhouse.example:8443/"));
  EXPECT_TRUE(url_has_credentials("https://user@clickhouse.example"));
  EXPECT_FALSE(url_has_credentials("https://clickhouse.example"));
  EXPECT_EQ(http_url_problem("ftp://host"), "got scheme 'ftp'");
  for (const char* bad : {"notaurl", "127.0.0.1:8123", "http://", "http://u:secret@", ""}) {
    auto problem = http_url_problem(bad);
    ASSERT_TRUE(problem) << bad;
    EXPECT_EQ(problem->find("secret"), std::string::npos) << *problem;
  }

  CLI::App app;
  std::string url;
  check_http_url(app.add_option("--clickhouse-url", url));
  EXPECT_EQ(error_of(app, {"--clickhouse-url", "ftp://h"}),
            "--clickhouse-url needs http(s)://HOST[:PORT], e.g. --clickhouse-url http://127.0.0.1:8123 (got scheme "
            "'ftp')");
  std::string refused = error_of(app, {"--clickhouse-url", "http://writer:s3cret@db:8123"});
  EXPECT_EQ(refused,
            "--clickhouse-url must not hold a user or password: use --clickhouse-user and PYEBPF_CLICKHOUSE_PASSWORD");
}

TEST(FlagRules, RedactedUrlsKeepNoCredentials) {
  EXPECT_EQ(redact_url("http://writer:s3cret@db.internal:8123/"), "http://db.internal:8123/");
  EXPECT_EQ(redact_url("http://writer@db.internal:8123"), "http://db.internal:8123/");
  EXPECT_EQ(redact_url("http://127.0.0.1:8123"), "http://127.0.0.1:8123/");
  EXPECT_EQ(redact_url("u:s3cret@nohost"), "(a URL curl cannot parse)");
}

}  // namespace
}  // namespace pyebpf::flags
