// SPDX-License-Identifier: Apache-2.0
// Command-line parsing: required flags, the report subcommand, outputs,
// usage errors, and the ClickHouse password kept out of ps and the record.
#include "app/cli.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "app/registry.hpp"
#include "test_support.hpp"
#include "trackers/py_stack/py_stack.hpp"

namespace pyebpf::app {
namespace {

// argv as main() gets it, and the exit code parse_command_line sets.
struct Parsed {
  std::optional<Options> options;
  int exit_code = -1;
  std::vector<std::string> argv_after;  // argv once parsed (the password is overwritten in place)
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pyebpf");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Parsed p;
  p.options = parse_command_line(static_cast<int>(argv.size()), argv.data(), p.exit_code);
  for (char* a : argv) p.argv_after.emplace_back(a);
  return p;
}

TEST(Cli, ProfileNeedsPidsAndEnv) {
  auto p = parse({"-p", "12", "34", "-e", "prod", "--enable", "gil", "offcpu", "--duration", "5"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->command, Options::Command::Profile);
  EXPECT_EQ(p.options->pids, (std::vector<pid_t>{12, 34}));
  EXPECT_EQ(p.options->env, "prod");
  EXPECT_EQ(p.options->enable, (std::vector<std::string>{"gil", "offcpu"}));
  EXPECT_EQ(p.options->duration_s, 5.0);
  EXPECT_TRUE(p.options->report);
  for (auto args : std::vector<std::vector<std::string>>{{"-e", "prod"}, {"-p", "12"}, {"-p", "0", "-e", "x"}}) {
    auto bad = parse(args);
    EXPECT_FALSE(bad.options) << args[0];
    EXPECT_EQ(bad.exit_code, 2) << "usage errors exit with 2";
  }
}

TEST(Cli, NameReplacesOrJoinsPidsAndChildrenAreFollowedByDefault) {
  auto p = parse({"-n", "gunicorn.*myapp", "-e", "prod"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->name_pattern, "gunicorn.*myapp");
  EXPECT_TRUE(p.options->pids.empty());
  EXPECT_TRUE(p.options->follow_children);
  EXPECT_EQ(p.options->max_targets, 256u);
  auto both = parse({"-p", "12", "--name", "celery", "--no-children", "--max-targets", "8", "-e", "prod"});
  ASSERT_TRUE(both.options);
  EXPECT_EQ(both.options->pids, (std::vector<pid_t>{12}));
  EXPECT_FALSE(both.options->follow_children);
  EXPECT_EQ(both.options->max_targets, 8u);
  for (auto args : std::vector<std::vector<std::string>>{{"--max-targets", "0", "-p", "1", "-e", "x"},
                                                         {"--no-children", "-e", "x"}}) {
    auto bad = parse(args);
    EXPECT_FALSE(bad.options) << args[0];
    EXPECT_EQ(bad.exit_code, 2);
  }
}

TEST(Cli, ReportSubcommandNeedsNoTarget) {
  auto p = parse({"report", "run.db", "--run", "3"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->command, Options::Command::Report);
  EXPECT_EQ(p.options->report_file, "run.db");
  EXPECT_EQ(p.options->report_run, 3);
  EXPECT_FALSE(parse({"report"}).options);
}

TEST(Cli, TopNeedsATargetNotAnEnvAndKeepsStdoutForItsView) {
  auto p = parse({"top", "-p", "12", "--refresh", "2", "--enable", "py_stack", "--sqlite", "seen.db"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->command, Options::Command::Top);
  EXPECT_EQ(p.options->env, "top");
  EXPECT_EQ(p.options->top_refresh_s, 2.0);
  EXPECT_EQ(p.options->sqlite_path, "seen.db");
  EXPECT_EQ(parse({"top", "-p", "12"}).options->top_refresh_s, 1.0);
  for (auto args : std::vector<std::vector<std::string>>{
           {"top"}, {"top", "-p", "1", "--also-stdout"}, {"top", "-p", "1", "--refresh", "0"}}) {
    auto bad = parse(args);
    EXPECT_FALSE(bad.options) << args.back();
    EXPECT_EQ(bad.exit_code, 2);
  }
}

TEST(Cli, OutputsAndTrackerFlags) {
  auto p = parse({"-p", "1", "-e", "t", "--sqlite", "a.db", "--folded", "f", "--no-report", "--pystack-frequency",
                  "199", "--ch-batch-size", "10"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->sqlite_path, "a.db");
  EXPECT_EQ(p.options->folded_path, "f");
  EXPECT_FALSE(p.options->report);
  EXPECT_EQ(p.options->ch_batch_size, 10u);
  EXPECT_EQ(test::tracker_options<trackers::PyStackOptions>(*p.options, "py_stack").frequency, 199u);
  EXPECT_FALSE(parse({"-p", "1", "-e", "t", "--pystack-frequency", "0"}).options);
  EXPECT_FALSE(parse({"-p", "1", "-e", "t", "--no-such-flag"}).options);
}

TEST(Cli, HelpAndVersionExitWithoutOptions) {
  testing::internal::CaptureStdout();
  auto help = parse({"--help"});
  std::string text = testing::internal::GetCapturedStdout();
  EXPECT_FALSE(help.options);
  EXPECT_EQ(help.exit_code, 0);
  // Every tracker's own group is there.
  for (const char* group : {"[Option Group: py_stack]", "[Option Group: gc]", "[Option Group: tcp_loss]",
                            "[Option Group: host_net_health]", "--offcpu-aggregate"})
    EXPECT_NE(text.find(group), std::string::npos) << group;
  // The flame-graph outputs name each kind the trackers make, and its file.
  auto defaults = test::parse_args({});
  ASSERT_TRUE(defaults);
  const auto kinds = flame_graph_kinds(defaults->trackers);
  EXPECT_GE(kinds.size(), 3u);
  EXPECT_NE(text.find("Collapsed stacks for flame graphs: " + flame_graph_kinds_help(defaults->trackers, true)),
            std::string::npos);
  for (const auto& kind : kinds) {
    const std::string file = kind.name + " in FILE" + (kind.file_suffix.empty() ? "" : "." + kind.file_suffix);
    EXPECT_NE(text.find(file), std::string::npos) << file;
  }
  testing::internal::CaptureStdout();
  auto version = parse({"--version"});
  EXPECT_NE(testing::internal::GetCapturedStdout().find('.'), std::string::npos);
  EXPECT_FALSE(version.options);
  EXPECT_EQ(version.exit_code, 0);
}

TEST(Cli, ThePasswordIsRedactedInTheRecordAndInArgv) {
  auto p = parse({"-p", "1", "-e", "t", "--clickhouse-url", "http://h:8123", "--clickhouse-password", "s3cret"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->clickhouse_password, "s3cret");
  EXPECT_EQ(p.options->command_line.find("s3cret"), std::string::npos) << p.options->command_line;
  EXPECT_NE(p.options->command_line.find("--clickhouse-password ***"), std::string::npos);
  EXPECT_EQ(p.argv_after.back(), "xxxxxx");  // /proc/PID/cmdline no longer shows it
  auto eq = parse({"-p", "1", "-e", "t", "--clickhouse-password=s3cret"});
  ASSERT_TRUE(eq.options);
  EXPECT_EQ(eq.options->clickhouse_password, "s3cret");
  EXPECT_NE(eq.options->command_line.find("--clickhouse-password=***"), std::string::npos);
  EXPECT_EQ(eq.argv_after.back(), "--clickhouse-password=xxxxxx");
}

}  // namespace
}  // namespace pyebpf::app
