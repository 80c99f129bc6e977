// SPDX-License-Identifier: Apache-2.0
#include "app/stored_events.hpp"

#include <cstdio>
#include <string>

#include "app/registry.hpp"
#include "sinks/record_input.hpp"
#include "util/clock.hpp"

namespace pyebpf::app {

StoredEvents::StoredEvents() : report(make_report()) {}

void StoredEvents::add(const nlohmann::ordered_json& e) {
  auto m = e.find("metric");
  std::string metric = m != e.end() && m->is_string() ? m->get<std::string>() : "?";
  const sinks::TableSchema* schema = schema_for_metric(metric);
  if (!schema) {
    report.count_other(metric);
    return;
  }
  sinks::Record& r = records.try_emplace(schema, *schema).first->second;
  sinks::record_from_json(e, r);
  if (flame_graphs)
    flame_graphs->write(r);
  else
    report.add(r);
}

void StoredEvents::write_flame_graphs() {
  flame_graphs->begin_close(sinks::SteadyClock::now());
  std::fprintf(stderr, "pyebpf report: %s\n", flame_graphs->summary().c_str());
}

}  // namespace pyebpf::app
