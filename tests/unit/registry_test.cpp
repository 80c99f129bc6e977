// SPDX-License-Identifier: Apache-2.0
// The tracker registry: every tracker is one descriptor, and what the rest of
// pyebpf derives from the list (names, schemas, report, flame graphs) holds.
#include "app/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <set>

#include "pyebpf/error.hpp"
#include "sinks/clickhouse_format.hpp"
#include "test_support.hpp"

namespace pyebpf::app {
namespace {

// --enable's names in registry order: a tracker's own, or each of its features.
std::vector<std::string> enable_names() {
  std::vector<std::string> names;
  for (const auto* d : tracker_registry()) {
    if (d->features.empty()) names.push_back(d->name);
    for (const auto& f : d->features) names.push_back(f.name);
  }
  return names;
}

// What create_trackers({}) must make: one tracker per descriptor, in registry
// order, named after it or after its parts (features that are no alias).
std::vector<std::string> default_tracker_names() {
  std::vector<std::string> names;
  for (const auto* d : tracker_registry()) {
    std::string name = d->features.empty() ? d->name : "";
    for (const auto& f : d->features) {
      if (!f.parts.empty()) continue;
      name += (name.empty() ? "" : ", ") + f.name;
    }
    names.push_back(name);
  }
  return names;
}

TEST(Registry, EnableNamesAreUniqueAndFeaturesPointAtParts) {
  std::set<std::string> names;
  for (const auto* d : tracker_registry()) {
    EXPECT_FALSE(d->help.empty()) << d->name;
    EXPECT_TRUE(d->create) << d->name;
    EXPECT_FALSE(d->schemas.empty()) << d->name << " emits nothing";
    if (d->features.empty()) {
      EXPECT_TRUE(names.insert(d->name).second) << d->name;
    }
    std::set<std::string> parts;
    for (const auto& f : d->features) {
      EXPECT_TRUE(names.insert(f.name).second) << f.name;
      if (f.parts.empty()) parts.insert(f.name);
    }
    for (const auto& f : d->features) {
      for (const auto& part : f.parts) EXPECT_TRUE(parts.count(part)) << f.name << " -> " << part;
    }
  }
  EXPECT_EQ(tracker_names_help(), fmt::format("{}", fmt::join(enable_names(), ", ")));
  EXPECT_GE(enable_names().size(), 2u);
}

TEST(Registry, SchemasAreUniqueAndStartWithTheCommonFields) {
  std::set<std::string> metrics, tables;
  for (const auto* schema : all_schemas()) {
    EXPECT_TRUE(metrics.insert(schema->metric()).second) << schema->metric();
    EXPECT_TRUE(tables.insert(schema->table()).second) << schema->table();
    EXPECT_EQ(schema->table().rfind("ebpf_", 0), 0u) << schema->table();
    EXPECT_EQ(schema_for_metric(schema->metric()), schema);
    const auto& c = schema->columns();
    ASSERT_GE(c.size(), 3u);
    EXPECT_EQ(c[sinks::host_fields::env].name, "env");
    EXPECT_EQ(c[sinks::host_fields::ts].name, "ts");
    EXPECT_EQ(c[sinks::host_fields::ts_us].name, "ts_us");
    // Every column is one the databases can create.
    auto ddl = sinks::clickhouse::table_columns(*schema, sinks::clickhouse::Dialect{});
    EXPECT_EQ(ddl.size(), c.size() + 2) << "host and extra";  // host and extra
  }
  EXPECT_EQ(schema_for_metric("no_such_metric"), nullptr);
}

TEST(Registry, CreatesWhatEnableNamesInOrderWithAliasesExpanded) {
  auto options = test::parse_args({});
  ASSERT_TRUE(options);
  auto names_of = [](const std::vector<std::unique_ptr<trackers::Tracker>>& created) {
    std::vector<std::string> names;
    for (const auto& t : created) names.push_back(t->name());
    return names;
  };
  // One TCP tracker, whichever of its parts are named and in whatever order.
  auto created = create_trackers({"tcp_loss", "gc", "tcp_handshake", "gc"}, options->trackers);
  EXPECT_EQ(names_of(created), (std::vector<std::string>{"tcp_connect, tcp_accept, tcp_loss", "gc"}));
  EXPECT_EQ(created[0]->summary().size(), 3u) << "a summary line per part";

  auto all = create_trackers({}, options->trackers);
  EXPECT_EQ(names_of(all), default_tracker_names());
}

TEST(Registry, UnknownNamesFailWithTheListOfValidOnes) {
  auto options = test::parse_args({});
  try {
    create_trackers({"py_stack", "cpu"}, options->trackers);
    FAIL() << "accepted an unknown tracker";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown tracker 'cpu'");
    EXPECT_NE(e.hint().find("py_stack, gil"), std::string::npos) << e.hint();
  }
}

TEST(Registry, ReportAndFlameGraphsReadOnlyRegisteredSchemas) {
  auto schemas = all_schemas();
  auto registered = [&](const sinks::TableSchema* s) {
    return std::find(schemas.begin(), schemas.end(), s) != schemas.end();
  };
  for (const auto& kind : flame_graph_kinds(test::parse_args({})->trackers)) {
    EXPECT_TRUE(registered(kind.schema)) << kind.name;
    EXPECT_TRUE(kind.sample) << kind.name;
  }
  // A report with every section renders nothing but the event counts when empty.
  EXPECT_EQ(make_report().render(), "Events: none\n");
}

}  // namespace
}  // namespace pyebpf::app
