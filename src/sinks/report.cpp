// SPDX-License-Identifier: Apache-2.0
#include "sinks/report.hpp"

#include <fmt/format.h>

#include "sinks/report_text.hpp"

namespace pyebpf::sinks {

Report::Report(std::vector<Part> parts) : parts_(std::move(parts)) {
  for (auto& part : parts_) {
    for (const TableSchema* schema : part.schemas) by_schema_[schema] = part.section.get();
  }
}

void Report::add(const Record& record) {
  ++events_;
  ++per_metric_[record.metric()];
  auto it = by_schema_.find(&record.schema());
  if (it != by_schema_.end() && it->second) it->second->add(record);
}

void Report::count_other(std::string_view metric) {
  ++events_;
  auto it = per_metric_.find(metric);
  if (it == per_metric_.end()) it = per_metric_.emplace(std::string(metric), 0).first;
  ++it->second;
}

std::uint64_t Report::count_of(std::string_view metric) const {
  auto it = per_metric_.find(metric);
  return it == per_metric_.end() ? 0 : it->second;
}

std::string Report::render() const {
  std::string out;
  std::vector<std::string> counts;
  for (const auto& [metric, n] : per_metric_) counts.push_back(fmt::format("{} {}", metric, n));
  if (counts.empty()) counts.push_back("none");
  report::wrapped(out, "Events:", counts);
  for (const auto& part : parts_) {
    if (part.section) part.section->render(out);
  }
  return out;
}

std::string end_of_run_text(double duration_s, const std::string& stop_reason,
                            const std::vector<std::string>& summary_lines, const Report* report) {
  std::string out = fmt::format("pyebpf: ran {:.1f} s ({})\n", duration_s, stop_reason);
  for (const auto& line : summary_lines) out += "pyebpf: " + line + "\n";
  if (report) out += "\n" + report->render();
  return out;
}

}  // namespace pyebpf::sinks
