// SPDX-License-Identifier: Apache-2.0
#include "sinks/report_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <set>

namespace pyebpf::sinks::report {

// --- Distribution ------------------------------------------------------------

void Distribution::add(double value) {
  ++count_;
  total_ += value;
  max_ = count_ == 1 ? value : std::max(max_, value);
  if (values_.size() < capacity_) {
    values_.push_back(value);
  } else {
    // Reservoir sampling (Algorithm R) with a fixed-seed xorshift.
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    std::uint64_t j = rng_ % count_;
    if (j < capacity_) values_[j] = value;
  }
  sorted_ = false;
}

double Distribution::percentile(double q) const {
  if (values_.empty()) return 0;
  if (!sorted_) {
    std::sort(values_.begin(), values_.end());
    sorted_ = true;
  }
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values_.size())));
  return values_[std::clamp<std::size_t>(rank, 1, values_.size()) - 1];
}

// --- reading records -----------------------------------------------------------

std::string_view thread_of(const Record& r) {
  namespace f = thread_fields;
  if (r.kind(f::thread_name) == Record::Kind::Text) return r.text(f::thread_name);
  if (r.kind(f::comm) == Record::Kind::Text) return r.text(f::comm);
  return "?";
}

std::string field_text(const Record& r, FieldId f, const std::string& fallback) {
  if (r.kind(f) == Record::Kind::Text) return std::string(r.text(f));
  if (r.kind(f) == Record::Kind::UInt) return std::to_string(r.uint_value(f));
  if (r.kind(f) == Record::Kind::Int) return std::to_string(r.int_value(f));
  if (auto n = r.number(f)) return fmt::format("{}", *n);
  return fallback;
}

// --- frames --------------------------------------------------------------------

namespace {

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool scheduler_frame(std::string_view f) {
  static const std::set<std::string_view> names = {"schedule",
                                                   "__schedule",
                                                   "schedule_timeout",
                                                   "schedule_hrtimeout_range",
                                                   "io_schedule",
                                                   "finish_task_switch",
                                                   "finish_task_switch.isra.0",
                                                   "schedule_hrtimeout_range_clock",
                                                   "preempt_schedule",
                                                   "preempt_schedule_common",
                                                   "schedule_preempt_disabled"};
  return names.count(f) > 0;
}

// A kernel frame's function name, "[unknown]" when it has none.
std::string_view kernel_name(const stack::NativeFrame& frame) {
  switch (frame.kind) {
    case stack::NativeFrame::Kind::Symbol:
      return frame.symbol;
    case stack::NativeFrame::Kind::Truncated:
      return stack::kTruncated;
    default:
      return stack::kUnknown;
  }
}

}  // namespace

std::string short_frame(const stack::PyFrame& frame) {
  return stack::text_of(stack::PyFrame{frame.function, base_name(frame.file), frame.line});
}

std::string function_of(const stack::PyFrame& frame) {
  return fmt::format("{} ({})", frame.function, frame.file);
}

std::string short_stack(const Record& r, FieldId f) {
  std::string out;
  for (std::size_t i = 0; i < r.size(f); ++i) {
    if (i) out += ';';
    out += short_frame(r.py_frame(f, i));
  }
  return out;
}

std::string kernel_wait(const Record& r, FieldId f) {
  const std::size_t n = r.kind(f) == Record::Kind::NativeStack ? r.size(f) : 0;
  if (n == 0) return "-";
  static const char* prefixes[] = {"__x64_sys_", "__arm64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_", "ksys_"};
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view name = kernel_name(r.native_frame(f, i));
    for (const char* p : prefixes) {
      if (name.starts_with(p) && name.size() > std::strlen(p)) return std::string(name.substr(std::strlen(p)));
    }
  }
  for (std::size_t i = n; i-- > 0;) {
    std::string_view name = kernel_name(r.native_frame(f, i));
    if (!scheduler_frame(name)) return std::string(name);
  }
  return std::string(kernel_name(r.native_frame(f, n - 1)));
}

// --- text --------------------------------------------------------------------

std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string cut(const std::string& s, std::size_t width, bool keep_end) {
  if (columns(s) <= width) return s;
  if (width == 0) return {};
  std::size_t keep = width - 1;  // room for "…"
  if (keep_end) {
    std::size_t start = s.size();
    for (std::size_t n = 0; n < keep && start > 0;) {
      --start;
      if ((static_cast<unsigned char>(s[start]) & 0xC0) != 0x80) ++n;
    }
    return "…" + s.substr(start);
  }
  std::size_t end = 0;
  for (std::size_t n = 0; end < s.size();) {
    if ((static_cast<unsigned char>(s[end]) & 0xC0) != 0x80) {
      if (n == keep) break;
      ++n;
    }
    ++end;
  }
  return s.substr(0, end) + "…";
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  std::size_t n = columns(s);
  if (n >= width) return s;
  return right ? std::string(width - n, ' ') + s : s + std::string(width - n, ' ');
}

void table(std::string& out, const std::vector<Col>& cols, const std::vector<std::vector<std::string>>& rows,
           const std::vector<std::string>& details) {
  constexpr std::size_t indent = 2;
  std::size_t fixed = indent;
  for (const auto& c : cols) fixed += c.width + 1;
  std::size_t flex = kWidth > fixed ? kWidth - fixed + 1 : 10;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l(indent, ' ');
    for (std::size_t i = 0; i < cols.size(); ++i) {
      std::size_t w = cols[i].width ? cols[i].width : flex;
      std::string cell = cut(i < cells.size() ? cells[i] : "", w, cols[i].keep_end);
      bool last = i + 1 == cols.size();
      l += last && !cols[i].right ? cell : pad(cell, w, cols[i].right);
      if (!last) l += ' ';
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  std::vector<std::string> headers;
  for (const auto& c : cols) headers.push_back(c.header);
  line(headers);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    line(rows[i]);
    if (i < details.size() && !details[i].empty()) {
      const std::size_t pad_to = indent + cols[0].width + 1 + (cols.size() > 1 ? cols[1].width + 1 : 0);
      out += std::string(pad_to, ' ') + cut(details[i], kWidth - pad_to, false) + "\n";
    }
  }
}

void wrapped(std::string& out, const std::string& lead, const std::vector<std::string>& items) {
  std::string l = lead;
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (columns(l) + 1 + columns(item) > kWidth && columns(l) > columns(lead)) {
      out += l + "\n";
      l = std::string(columns(lead), ' ');
    }
    l += (l.back() == ' ' ? "" : " ") + cut(item, kWidth - columns(lead) - 1, false);
  }
  out += l + "\n";
}

void heading(std::string& out, const std::string& title) {
  out += "\n" + cut(title, kWidth, false) + "\n";
}

std::string count_text(std::uint64_t n) {
  return fmt::format("{}", n);
}

std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

std::string ms(double v) {
  if (v < 100) return fmt::format("{:.3f}", v);
  if (v < 100000) return fmt::format("{:.1f}", v);
  return fmt::format("{:.0f}", v);
}

}  // namespace pyebpf::sinks::report
