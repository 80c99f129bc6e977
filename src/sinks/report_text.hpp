// SPDX-License-Identifier: Apache-2.0
// Helpers for report sections (sinks/report.hpp): bounded aggregation, and
// tables and lists that fit report::kWidth columns.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinks/record.hpp"
#include "stack/frames.hpp"

namespace pyebpf::sinks::report {

inline constexpr std::size_t kWidth = 100;
inline constexpr std::size_t kTop = 10;
// Distinct stacks/reasons kept (bounded memory over hours); the rest add to kOther.
inline constexpr std::size_t kMaxKeys = 50'000;
inline constexpr const char* kOther = "(other: too many distinct stacks)";

// Durations (or any values) of one series, for count/total/percentiles. Keeps
// every value up to `capacity` of them, then a uniform sample of that many
// (deterministic: the same events in the same order give the same numbers).
// Count, total and max stay exact.
class Distribution {
 public:
  explicit Distribution(std::size_t capacity = 100'000) : capacity_(capacity) {}
  void add(double value);
  std::uint64_t count() const { return count_; }
  double total() const { return total_; }
  double max() const { return max_; }
  // Nearest-rank percentile, q in (0, 1]. 0 if empty.
  double percentile(double q) const;

 private:
  std::size_t capacity_;
  mutable std::vector<double> values_;
  mutable bool sorted_ = true;
  std::uint64_t count_ = 0;
  double total_ = 0;
  double max_ = 0;
  std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
};

// Time attributed to something (a GIL holder, an off-CPU reason).
struct Timed {
  double ms = 0;
  std::uint64_t count = 0;
  double max_ms = 0;
};

// --- reading records ---------------------------------------------------------

// The thread an event is about: its thread_name field, else comm, else "?"
// (a view into `r`).
std::string_view thread_of(const Record& r);
// A field as text whatever its kind ("?" when absent): for labels.
std::string field_text(const Record& r, FieldId f, const std::string& fallback = "?");

// --- frames, for narrow displays ---------------------------------------------

// "func (/srv/app/views.py:12)" -> "func (views.py:12)".
std::string short_frame(const stack::PyFrame& frame);
// "func (/srv/app/views.py)": the function, whatever line.
std::string function_of(const stack::PyFrame& frame);
// A Python stack field as "a (x.py:1);b (y.py:2)" with files by base name.
std::string short_stack(const Record& r, FieldId f);
// What a thread slept in, from a kernel stack field (root first): its system
// call (futex, ppoll, read, ...) if the stack shows one, else the first frame
// below the scheduler; "-" if none.
std::string kernel_wait(const Record& r, FieldId f);

// --- text --------------------------------------------------------------------

std::size_t columns(const std::string& s);
// Cuts `s` to `width` columns: keeping the end (stacks: the leaf matters) or the start.
std::string cut(const std::string& s, std::size_t width, bool keep_end);
std::string pad(const std::string& s, std::size_t width, bool right);

struct Col {
  std::string header;
  std::size_t width;   // 0: the last column, taking what is left of the line
  bool right = false;  // numbers
  bool keep_end = false;
};

// Two-space indented table, one space between columns, at most kWidth wide.
// `details[i]`, when given and not empty, is printed under row i, indented.
void table(std::string& out, const std::vector<Col>& cols, const std::vector<std::vector<std::string>>& rows,
           const std::vector<std::string>& details = {});
// Wraps "a, b, c" lists at kWidth.
void wrapped(std::string& out, const std::string& lead, const std::vector<std::string>& items);
void heading(std::string& out, const std::string& title);

std::string count_text(std::uint64_t n);
std::string pct(double part, double whole);
std::string ms(double v);

// Entries of `m` (any map) sorted by weight descending, then key: the same
// order whatever the container's own.
template <typename Map, typename F>
std::vector<std::pair<typename Map::key_type, typename Map::mapped_type>> top(const Map& m, F weight, std::size_t n) {
  std::vector<std::pair<typename Map::key_type, typename Map::mapped_type>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
    const double wa = weight(a.second), wb = weight(b.second);
    return wa != wb ? wa > wb : a.first < b.first;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

// "name share, ..." (or "name ms, ..." with `as_ms`) of the top 4 threads in a
// thread -> weight map, then "+N more".
template <typename Map>
std::string thread_list(const Map& threads, bool as_ms) {
  using V = typename Map::mapped_type;
  double sum = 0;
  for (const auto& [k, v] : threads) sum += static_cast<double>(v);
  std::vector<std::string> items;
  for (const auto& [name, w] : top(
           threads, [](V x) { return static_cast<double>(x); }, 4))
    items.push_back(std::string(name) + " " + (as_ms ? ms(static_cast<double>(w)) : pct(static_cast<double>(w), sum)));
  if (threads.size() > 4) items.push_back("+" + std::to_string(threads.size() - 4) + " more");
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace pyebpf::sinks::report
