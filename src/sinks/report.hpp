// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

// One tracker's part of the end-of-run report (TrackerDescriptor::report):
// fed the records of its tracker's schemas, it renders plain-text tables no
// wider than report::kWidth (sinks/report_text.hpp has the helpers). A
// section that saw nothing renders nothing.
class ReportSection {
 public:
  virtual ~ReportSection() = default;
  virtual void add(const Record& record) = 0;
  virtual void render(std::string& out) const = 0;
};

// The end-of-run report, built from records alone, so a tracker's section
// appears as soon as its events exist, live or from a stored file (`pyebpf
// report`): "Events:" (how many of each metric), then each tracker's section
// in registry order. The counts of lost and dropped events are the end-of-run
// summary lines, printed just before the report.
class Report {
 public:
  struct Part {
    std::vector<const TableSchema*> schemas;  // the records the section reads
    std::unique_ptr<ReportSection> section;
  };
  explicit Report(std::vector<Part> parts);

  void add(const Record& record);
  // An event of a metric no schema describes (a stored file from another
  // pyebpf version): counted, nothing more.
  void count_other(std::string_view metric);
  std::uint64_t events() const { return events_; }
  // How many events of `metric` were added.
  std::uint64_t count_of(std::string_view metric) const;
  std::string render() const;

 private:
  std::vector<Part> parts_;
  std::map<const TableSchema*, ReportSection*> by_schema_;
  std::map<std::string, std::uint64_t, std::less<>> per_metric_;
  std::uint64_t events_ = 0;
};

// Feeds every record into a Report (live runs).
class ReportSink : public Sink {
 public:
  explicit ReportSink(Report report) : report(std::move(report)) {}
  void write(const Record& record) override { report.add(record); }
  Report report;
};

// The lines pyebpf prints at the end of a run and `pyebpf report` prints for
// a stored run: "ran N s (why)", the summary lines, then the report.
std::string end_of_run_text(double duration_s, const std::string& stop_reason,
                            const std::vector<std::string>& summary_lines, const Report* report);

}  // namespace pyebpf::sinks
