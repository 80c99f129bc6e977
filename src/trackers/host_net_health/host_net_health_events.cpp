// SPDX-License-Identifier: Apache-2.0
#include "trackers/host_net_health/host_net_health_events.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "sinks/report_text.hpp"

namespace pyebpf::trackers {

const HostNetHealthSchema& host_net_health_schema() {
  static const HostNetHealthSchema schema;
  return schema;
}

namespace {

using namespace sinks::report;

// Host network health: the last snapshot's TCP states, and every warning.
class HostNetHealthSection : public sinks::ReportSection {
 public:
  void add(const sinks::Record& r) override {
    const HostNetHealthSchema& s = host_net_health_schema();
    ++snapshots_;
    if (r.kind(s.warnings) == sinks::Record::Kind::Texts) {
      for (std::size_t i = 0; i < r.size(s.warnings); ++i) {
        std::string text(r.text_at(s.warnings, i));
        if (warnings_.size() < 1000 || warnings_.count(text)) ++warnings_[text];
      }
    }
    last_.emplace(r);
  }

  void render(std::string& out) const override {
    if (snapshots_ == 0) return;
    const HostNetHealthSchema& s = host_net_health_schema();
    heading(out, fmt::format("Host network health  [host_net_health: {} snapshots]", snapshots_));
    const sinks::Record& l = *last_;
    out += fmt::format("  last: {} established in / {} out, {} time_wait, {} close_wait, {} syn_sent, {} syn_recv\n",
                       field_text(l, s.established_inbound), field_text(l, s.established_outbound),
                       field_text(l, s.time_wait), field_text(l, s.close_wait), field_text(l, s.syn_sent),
                       field_text(l, s.syn_recv));
    if (warnings_.empty()) {
      out += "  no warnings\n";
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [w, n] : top(
             warnings_, [](std::uint64_t x) { return static_cast<double>(x); }, kTop))
      rows.push_back({count_text(n), w});
    table(out, {{"times", 6, true}, {"warning", 0}}, rows);
  }

 private:
  std::uint64_t snapshots_ = 0;
  std::map<std::string, std::uint64_t> warnings_;
  std::optional<sinks::Record> last_;
};

}  // namespace

std::unique_ptr<sinks::ReportSection> make_host_net_health_report() {
  return std::make_unique<HostNetHealthSection>();
}

}  // namespace pyebpf::trackers
