// SPDX-License-Identifier: Apache-2.0
#include "live/view_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace pyebpf::live {

namespace r = sinks::report;

namespace {

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

// One line: cut to the width (a terminal wraps what is longer).
void line(std::vector<std::string>& out, const std::string& text, std::size_t width) {
  out.push_back(r::cut(text, width, false));
}

std::string function_label(const FunctionKey& key) {
  const std::string file = std::filesystem::path(key.file).filename().string();
  return key.first_line ? fmt::format("{} ({}:{})", key.function, file, key.first_line)
                        : fmt::format("{} ({})", key.function, file);
}

double waited_ms(const ThreadTime& t) {
  double ms = 0;
  for (const auto& [kind, w] : t.waits) ms += w.ms;
  return ms;
}

// "GC pauses 3, p99 12.1 ms, longest 15.0 ms" for each kind of pause.
std::string pauses_text(const Window& w) {
  std::string out;
  for (const auto& kind : w.pause_kinds) {
    const auto& d = w.pauses.at(kind);
    out += fmt::format("  {} {}, p99 {:.1f} ms, longest {:.1f} ms", kind, d.count(), d.percentile(0.99), d.max());
  }
  return out;
}

std::string span_label(const Window& w, bool since_start) {
  return since_start ? fmt::format("since start ({:.0f} s)", w.seconds) : fmt::format("last {:.1f} s", w.seconds);
}

std::string totals(const Window& w) {
  const double core_ms = w.seconds * 1000;
  return fmt::format("CPU {} of a core, {} samples  lost {}{}", percent(w.cpu_ms, core_ms), w.samples, w.lost,
                     pauses_text(w));
}

// The title and the chosen span, its totals, then the other span's.
std::vector<std::string> header(const Window& w, const Window& other, const ViewState& state, const std::string& title,
                                Screen s) {
  std::vector<std::string> out;
  std::string span = span_label(w, state.since_start);
  if (state.paused) span += "  PAUSED";
  const std::size_t room = s.width > span.size() + 1 ? s.width - span.size() - 1 : 0;
  line(out, r::pad(r::cut(title, room, false), room, false) + " " + span, s.width);
  line(out, totals(w), s.width);
  line(out, span_label(other, !state.since_start) + ": " + totals(other), s.width);
  return out;
}

// The column of the functions table that shows the other span's self share.
std::string other_column(const ViewState& state) {
  return state.since_start ? "LAST" : "ALL";
}

std::vector<std::pair<FunctionKey, FunctionTime>> functions_of(const Window& w, const ViewState& state,
                                                               double& cpu_ms) {
  std::map<FunctionKey, FunctionTime> sum;
  cpu_ms = 0;
  for (const auto& [tid, t] : w.threads) {
    if (state.tid && *state.tid != tid) continue;
    cpu_ms += t.cpu_ms;
    for (const auto& [key, time] : t.functions) {
      auto& s = sum[key];
      s.self_ms += time.self_ms;
      s.total_ms += time.total_ms;
    }
  }
  const bool by_self = state.sort == ViewState::Sort::Self;
  return r::top(
      sum, [&](const FunctionTime& f) { return by_self ? f.self_ms : f.total_ms; }, sum.size());
}

// The top functions of `w`, with their self share in `other` beside.
void functions(std::vector<std::string>& out, const Window& w, const Window& other, const ViewState& state, Screen s,
               std::size_t rows) {
  double cpu_ms = 0, other_cpu_ms = 0;
  const auto sorted = functions_of(w, state, cpu_ms);
  std::map<FunctionKey, double> other_self;
  for (const auto& [key, time] : functions_of(other, state, other_cpu_ms)) other_self[key] = time.self_ms;
  const bool by_self = state.sort == ViewState::Sort::Self;
  std::string what = "FUNCTION (file:line)";
  if (state.tid) {
    auto it = w.threads.find(*state.tid);
    what += fmt::format("  [thread {} {}]", *state.tid, it == w.threads.end() ? "" : it->second.name);
  }
  line(out,
       fmt::format("{:>7}{:>7}{:>7}  {}", by_self ? "SELF*" : "SELF", by_self ? "TOTAL" : "TOTAL*", other_column(state),
                   what),
       s.width);
  for (std::size_t i = 0; i < rows && i < sorted.size(); ++i) {
    const auto& [key, time] = sorted[i];
    auto it = other_self.find(key);
    line(out,
         fmt::format("{:>7}{:>7}{:>7}  {}", percent(time.self_ms, cpu_ms), percent(time.total_ms, cpu_ms),
                     percent(it == other_self.end() ? 0 : it->second, other_cpu_ms), function_label(key)),
         s.width);
  }
  if (sorted.empty()) line(out, "     (no CPU samples with Python frames)", s.width);
}

// Every thread of the window, the one on CPU or waiting longest first.
std::vector<std::pair<std::uint32_t, ThreadTime>> busiest(const Window& w) {
  return r::top(
      w.threads, [](const ThreadTime& t) { return t.cpu_ms + waited_ms(t); }, w.threads.size());
}

std::vector<std::pair<std::uint32_t, ThreadTime>> threads_of(const Window& w, const ViewState& state) {
  if (state.threads_by_name) {
    std::vector<std::pair<std::uint32_t, ThreadTime>> v(w.threads.begin(), w.threads.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.name < b.second.name; });
    return v;
  }
  return busiest(w);
}

// The kind of wait that took the thread longest, and its main reason.
std::string main_wait(const ThreadTime& t) {
  const WaitTime* longest = nullptr;
  std::string kind;
  for (const auto& [k, w] : t.waits) {
    if (!longest || w.ms > longest->ms) longest = &w, kind = k;
  }
  if (!longest || longest->ms <= 0) return "";
  const std::string reason = longest->main_reason();
  return reason.empty() ? kind : kind + ": " + reason;
}

void threads(std::vector<std::string>& out, const Window& w, const ViewState& state, Screen s, std::size_t rows) {
  std::string head = fmt::format("  {:<16}{:>8}{:>7}", state.threads_by_name ? "THREAD*" : "THREAD", "TID", "CPU");
  for (const auto& kind : w.wait_kinds) head += fmt::format("{:>8}", r::cut(kind, 7, false));
  line(out, head + "  MAIN WAIT", s.width);
  const double core_ms = w.seconds * 1000;
  std::size_t shown = 0;
  for (const auto& [tid, t] : threads_of(w, state)) {
    if (state.tid && *state.tid != tid) continue;
    if (shown++ == rows) break;
    std::string row = fmt::format("{} {:<15}{:>8}{:>7}", state.tid ? '>' : ' ', r::cut(t.name, 15, false), tid,
                                  percent(t.cpu_ms, core_ms));
    for (const auto& kind : w.wait_kinds) {
      auto it = t.waits.find(kind);
      row += fmt::format("{:>8}", percent(it == t.waits.end() ? 0 : it->second.ms, core_ms));
    }
    line(out, row + "  " + main_wait(t), s.width);
  }
}

}  // namespace

std::string keys_help() {
  // Fits 80 columns: the smallest screen the view is made for.
  return "q quit  s/t sort self/total  n by name  f one thread  a all  i span  p pause";
}

std::vector<std::string> render(const Window& window, const Window& other, const ViewState& state,
                                const std::string& title, Screen screen) {
  std::vector<std::string> out = header(window, other, state, title, screen);
  // Fixed lines: 3 of header, a blank and a column header per table, the keys.
  constexpr std::size_t kFixed = 8;
  const std::size_t rows = screen.height > kFixed ? screen.height - kFixed : 2;
  const std::size_t thread_rows = std::min(window.threads.size(), std::max<std::size_t>(rows / 3, 1));
  out.emplace_back();
  functions(out, window, other, state, screen, rows - std::min(rows - 1, thread_rows));
  out.emplace_back();
  threads(out, window, state, screen, thread_rows);
  line(out, keys_help(), screen.width);
  return out;
}

std::optional<std::uint32_t> next_thread(const Window& window, std::optional<std::uint32_t> current) {
  const auto threads = busiest(window);
  if (threads.empty()) return std::nullopt;
  if (!current) return threads.front().first;
  for (std::size_t i = 0; i + 1 < threads.size(); ++i) {
    if (threads[i].first == *current) return threads[i + 1].first;
  }
  return std::nullopt;
}

}  // namespace pyebpf::live
