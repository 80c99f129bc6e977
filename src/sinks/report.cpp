// SPDX-License-Identifier: Apache-2.0
#include "sinks/report.hpp"

#include "sinks/stacks.hpp"

#include <fmt/format.h>

#include <optional>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace pyebpf::sinks {
namespace {

// Distinct stacks/reasons kept (bounded memory over hours); the rest add to "(other)".
constexpr std::size_t kMaxKeys = 50'000;
constexpr const char* kOther = "(other: too many distinct stacks)";

// --- reading events ------------------------------------------------------

std::string str(const Event& e, const char* key, const std::string& fallback = {}) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

// A number field, or nullopt if absent or not a number.
std::optional<double> num(const Event& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// A whole-number field (a count, a generation, a tid), or nullopt if absent,
// not a number, or beyond ±2^53 where doubles stop counting exactly: files
// handed to `pyebpf report` may hold anything, and converting an out-of-range
// double to an integer is undefined behaviour.
std::optional<std::int64_t> whole(const Event& e, const char* key) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  auto v = num(e, key);
  if (!v || !(std::fabs(*v) <= kExact)) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

// A count that adds up: negative ones count as nothing.
std::uint64_t count_of(const Event& e, const char* key, std::int64_t fallback) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, whole(e, key).value_or(fallback)));
}

// --- text ------------------------------------------------------------------

std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Cuts `s` to `width` columns: keeping the end (stacks: the leaf matters) or the start.
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

struct Col {
  std::string header;
  std::size_t width;   // 0: the last column, taking what is left of the line
  bool right = false;  // numbers
  bool keep_end = false;
};

// Two-space indented table, one space between columns, at most kWidth wide.
// `details[i]`, when given and not empty, is printed under row i, indented.
void table(std::string& out, const std::vector<Col>& cols, const std::vector<std::vector<std::string>>& rows,
           const std::vector<std::string>& details = {}) {
  constexpr std::size_t indent = 2;
  std::size_t fixed = indent;
  for (const auto& c : cols) fixed += c.width + 1;
  std::size_t flex = Report::kWidth > fixed ? Report::kWidth - fixed + 1 : 10;
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
      out += std::string(pad_to, ' ') + cut(details[i], Report::kWidth - pad_to, false) + "\n";
    }
  }
}

// Wraps "a, b, c" lists at kWidth.
void wrapped(std::string& out, const std::string& lead, const std::vector<std::string>& items) {
  std::string l = lead;
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (columns(l) + 1 + columns(item) > Report::kWidth && columns(l) > columns(lead)) {
      out += l + "\n";
      l = std::string(columns(lead), ' ');
    }
    l += (l.back() == ' ' ? "" : " ") + cut(item, Report::kWidth - columns(lead) - 1, false);
  }
  out += l + "\n";
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

// Entries of `m` sorted by value descending, then key: deterministic.
template <typename K, typename V, typename F>
std::vector<std::pair<K, V>> top(const std::map<K, V>& m, F weight, std::size_t n) {
  std::vector<std::pair<K, V>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [&](const auto& a, const auto& b) { return weight(a.second) > weight(b.second); });
  if (v.size() > n) v.resize(n);
  return v;
}

// "name (share)" of the top threads in a thread->weight map.
template <typename V>
std::string thread_list(const std::map<std::string, V>& threads, bool as_ms) {
  double sum = 0;
  for (const auto& [k, v] : threads) sum += static_cast<double>(v);
  std::string out;
  for (const auto& [name, w] : top(
           threads, [](V x) { return static_cast<double>(x); }, 4)) {
    if (!out.empty()) out += ", ";
    out += name + (as_ms ? " " + ms(static_cast<double>(w)) : " " + pct(static_cast<double>(w), sum));
  }
  if (threads.size() > 4) out += fmt::format(", +{} more", threads.size() - 4);
  return out;
}

void heading(std::string& out, const std::string& title) {
  out += "\n" + cut(title, Report::kWidth, false) + "\n";
}

}  // namespace

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
  auto& v = const_cast<std::vector<double>&>(values_);
  if (!sorted_) {
    std::sort(v.begin(), v.end());
    sorted_ = true;
  }
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// --- Report ---------------------------------------------------------------------

void Report::add(const Event& e) {
  ++events_;
  std::string metric = str(e, "metric", "?");
  ++per_metric_[metric];
  std::string thread = str(e, "thread_name", str(e, "comm", "?"));

  if (metric == "py_stack") {
    std::string stack = str(e, "stack");
    if (stack.empty()) stack = "(no Python frames)";
    ++samples_;
    ++cpu_threads_[thread];
    auto it = stacks_.find(stack);
    if (it == stacks_.end() && stacks_.size() >= kMaxKeys) {
      stacks_capped_ = true;
      it = stacks_.try_emplace(kOther).first;
    } else if (it == stacks_.end()) {
      it = stacks_.try_emplace(stack).first;
    }
    ++it->second.count;
    ++it->second.threads[thread];
    auto frames = split_frames(stack);
    if (!frames.empty()) ++self_[function_of(frames.back())];
    std::set<std::string> seen;
    for (const auto& f : frames) {
      auto fn = function_of(f);
      if (seen.insert(fn).second && total_.size() < kMaxKeys) ++total_[fn];
    }
  } else if (metric == "gil_wait") {
    double wait = num(e, "duration_ms").value_or(0);
    gil_waits_.add(wait);
    std::string holder = str(e, "holder_thread_name");
    if (holder.empty()) {
      auto tid = whole(e, "holder_tid").value_or(0);
      holder = tid > 0 ? fmt::format("tid {}", tid) : "(unknown holder)";
    }
    std::string holder_stack = str(e, "holder_py_stack");
    std::pair<std::string, std::string> key{holder,
                                            holder_stack.empty() ? "(no Python stack)" : leaf_frame(holder_stack)};
    if (!gil_.count(key) && gil_.size() >= kMaxKeys) key = {kOther, ""};
    Timed& t = gil_[key];
    t.ms += wait;
    ++t.count;
    t.max_ms = std::max(t.max_ms, wait);
    t.threads[thread] += wait;
  } else if (metric == "gc_pause") {
    double d = num(e, "duration_ms").value_or(0);
    gc_[whole(e, "generation").value_or(-1)].add(d);
    gc_all_.add(d);
  } else if (metric == "off_cpu") {
    double off = num(e, "off_cpu_ms").value_or(0);
    auto count = std::max<std::uint64_t>(1, count_of(e, "count", 1));
    off_cpu_ms_ += off;
    runq_ms_ += num(e, "runq_ms").value_or(0);
    off_cpu_count_ += count;
    std::string py = str(e, "py_stack");
    OffCpuKey key{str(e, "prev_state", "-"), kernel_wait(e), thread, py.empty() ? "-" : leaf_frame(py)};
    if (!off_cpu_.count(key) && off_cpu_.size() >= kMaxKeys) key = {"-", kOther, "-", "-"};
    Timed& t = off_cpu_[key];
    t.ms += off;
    t.count += count;
    t.max_ms = std::max(t.max_ms, count > 1 ? off / static_cast<double>(count) : off);
  } else if (metric == "tcp_connect") {
    // SYN -> established for successes, SYN -> outcome (duration_us) for the others.
    connect_[str(e, "outcome", "?")].add(num(e, "handshake_us").value_or(num(e, "duration_us").value_or(0)) / 1000.0);
  } else if (metric == "tcp_accept") {
    if (auto d = num(e, "accept_dwell_us")) accept_dwell_.add(*d / 1000.0);
    if (auto r = num(e, "handshake_rtt_us")) accept_rtt_.add(*r / 1000.0);
    auto len = num(e, "accept_queue_len"), max = num(e, "accept_queue_max");
    if (len && max && *max > 0 && *len >= *max) ++accept_queue_full_;
  } else if (metric == "tcp_loss") {
    ++loss_events_[str(e, "event", "?")];
    std::string peer = str(e, "dst_ip", "?") + ":" + str(e, "dst_port", "?");
    if (loss_peers_.size() < kMaxKeys || loss_peers_.count(peer)) ++loss_peers_[peer];
  } else if (metric == "handoff") {
    double d = num(e, "handoff_ms").value_or(num(e, "duration_ms").value_or(0));
    handoff_.add(d);
    std::string worker = str(e, "worker_thread_name", str(e, "worker_comm", "?"));
    if (handoff_by_worker_.size() < 256 || handoff_by_worker_.count(worker))
      handoff_by_worker_.try_emplace(worker, 10'000).first->second.add(d);
  } else if (metric == "request_queue") {
    ++rq_summaries_;
    rq_picked_up_ += count_of(e, "picked_up", 0);
    rq_cancelled_ += count_of(e, "cancelled", 0);
    rq_queued_max_ = std::max(rq_queued_max_, num(e, "queued_max").value_or(0));
    rq_oldest_ms_ = std::max(rq_oldest_ms_, num(e, "oldest_queued_ms").value_or(0));
    rq_threads_max_ = std::max(rq_threads_max_, num(e, "threads_used").value_or(0));
  } else if (metric == "host_net_health") {
    ++snapshots_;
    auto w = e.find("warnings");
    if (w != e.end() && w->is_array()) {
      for (const auto& item : *w) {
        std::string text = item.is_string() ? item.get<std::string>() : item.dump();
        if (warnings_.size() < 1000 || warnings_.count(text)) ++warnings_[text];
      }
    }
    last_snapshot_ = e;
  }
}

void Report::render_cpu(std::string& out) const {
  if (samples_ == 0) return;
  heading(out, fmt::format("CPU: top Python stacks by share of samples  [py_stack: {} samples, {} threads]", samples_,
                           cpu_threads_.size()));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [stack, c] : top(
           stacks_, [](const Counted& x) { return static_cast<double>(x.count); }, kTop)) {
    auto main_thread = top(
                           c.threads, [](std::uint64_t x) { return static_cast<double>(x); }, 1)
                           .front()
                           .first;
    if (c.threads.size() > 1) {
      std::string more = fmt::format(" +{}", c.threads.size() - 1);
      main_thread = cut(main_thread, 24 - more.size(), false) + more;
    }
    rows.push_back({pct(static_cast<double>(c.count), static_cast<double>(samples_)), count_text(c.count), main_thread,
                    short_stack(stack)});
  }
  table(out,
        {{"share", 6, true},
         {"samples", 8, true},
         {"thread", 24},
         {"stack (root;...;leaf; files by base name)", 0, false, true}},
        rows);
  if (stacks_capped_) out += fmt::format("  (more than {} distinct stacks: the rest counted as one)\n", kMaxKeys);

  heading(out, "CPU: top functions  [self: on top of the stack; total: anywhere in it]");
  rows.clear();
  for (const auto& [fn, n] : top(
           self_, [](std::uint64_t x) { return static_cast<double>(x); }, kTop)) {
    auto t = total_.find(fn);
    rows.push_back({pct(static_cast<double>(n), static_cast<double>(samples_)),
                    pct(t == total_.end() ? 0 : static_cast<double>(t->second), static_cast<double>(samples_)),
                    count_text(n), fn});
  }
  table(out, {{"self", 6, true}, {"total", 6, true}, {"samples", 8, true}, {"function (file)", 0, false, true}}, rows);

  std::vector<std::string> threads;
  for (const auto& [name, n] : top(
           cpu_threads_, [](std::uint64_t x) { return static_cast<double>(x); }, 12))
    threads.push_back(name + " " + pct(static_cast<double>(n), static_cast<double>(samples_)));
  if (cpu_threads_.size() > 12) threads.push_back(fmt::format("+{} more", cpu_threads_.size() - 12));
  wrapped(out, "  threads:", threads);
}

void Report::render_gil(std::string& out) const {
  if (gil_waits_.count() == 0) return;
  heading(out, fmt::format("GIL: holders by the wait they caused  [gil_wait: {} waits]", gil_waits_.count()));
  out += fmt::format("  waits: total {} ms, p50 {} ms, p99 {} ms, max {} ms\n", ms(gil_waits_.total()),
                     ms(gil_waits_.percentile(0.5)), ms(gil_waits_.percentile(0.99)), ms(gil_waits_.max()));
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> waiters;
  for (const auto& [key, t] : top(
           gil_, [](const Timed& x) { return x.ms; }, kTop)) {
    rows.push_back({ms(t.ms), count_text(t.count), key.first, short_frame(key.second)});
    waiters.push_back("waiting (ms): " + thread_list(t.threads, true));
  }
  table(out, {{"wait ms", 10, true}, {"waits", 6, true}, {"holder thread", 24}, {"holder was running", 0, false, true}},
        rows, waiters);
}

void Report::render_gc(std::string& out) const {
  if (gc_all_.count() == 0) return;
  heading(out, fmt::format("GC pauses by generation  [gc_pause: {} collections, {} ms]", gc_all_.count(),
                           ms(gc_all_.total())));
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& name, const Distribution& d) {
    rows.push_back(
        {name, count_text(d.count()), ms(d.total()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
  };
  for (const auto& [gen, d] : gc_) row(gen < 0 ? "?" : std::to_string(gen), d);
  if (gc_.size() > 1) row("all", gc_all_);
  table(out,
        {{"gen", 4, true},
         {"count", 8, true},
         {"total ms", 11, true},
         {"p50 ms", 9, true},
         {"p99 ms", 9, true},
         {"max ms", 9, true}},
        rows);
}

void Report::render_off_cpu(std::string& out) const {
  if (off_cpu_count_ == 0) return;
  heading(out, fmt::format("Off-CPU: top reasons by time  [off_cpu: {} switches, {} ms off CPU, {} ms in run queue]",
                           off_cpu_count_, ms(off_cpu_ms_), ms(runq_ms_)));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, t] : top(
           off_cpu_, [](const Timed& x) { return x.ms; }, kTop)) {
    rows.push_back(
        {ms(t.ms), count_text(t.count), ms(t.max_ms), key.state, key.kernel, key.thread, short_frame(key.python)});
  }
  table(out,
        {{"total ms", 10, true},
         {"count", 7, true},
         {"max ms", 9, true},
         {"st", 2},
         {"kernel wait", 14},
         {"thread", 22},
         {"python (leaf)", 0, false, true}},
        rows);
}

void Report::render_tcp(std::string& out) const {
  if (!connect_.empty()) {
    std::uint64_t n = 0;
    for (const auto& [o, d] : connect_) n += d.count();
    heading(out,
            fmt::format("TCP connect latency (SYN to established, or to the failure)  [tcp_connect: {} connects]", n));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [outcome, d] : connect_)
      rows.push_back({outcome, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    table(out, {{"outcome", 10}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}},
          rows);
  }
  if (accept_dwell_.count() + accept_rtt_.count() > 0) {
    heading(out, fmt::format("TCP accept  [tcp_accept: {} accepts; accept queue full at {} of them]",
                             per_metric_.count("tcp_accept") ? per_metric_.at("tcp_accept") : 0, accept_queue_full_));
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const char* what, const Distribution& d) {
      if (d.count())
        rows.push_back({what, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
    };
    row("accept-queue dwell", accept_dwell_);
    row("handshake rtt", accept_rtt_);
    table(out, {{"", 18}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}}, rows);
  }
  if (!loss_events_.empty()) {
    std::uint64_t n = 0;
    for (const auto& [k, v] : loss_events_) n += v;
    heading(out, fmt::format("TCP loss  [tcp_loss: {} events]", n));
    std::vector<std::string> kinds, peers;
    for (const auto& [k, v] : top(
             loss_events_, [](std::uint64_t x) { return static_cast<double>(x); }, 20))
      kinds.push_back(fmt::format("{} {}", k, v));
    wrapped(out, "  by event:", kinds);
    for (const auto& [k, v] : top(
             loss_peers_, [](std::uint64_t x) { return static_cast<double>(x); }, 5))
      peers.push_back(fmt::format("{} {}", k, v));
    wrapped(out, "  top peers:", peers);
  }
}

void Report::render_handoff(std::string& out) const {
  if (handoff_.count() == 0 && rq_summaries_ == 0) return;
  heading(out,
          fmt::format("Request handoff (queued to picked up by a worker)  [handoff: {} requests]", handoff_.count()));
  if (rq_summaries_ > 0) {
    wrapped(out, "  request_queue:",
            {fmt::format("{} summaries", rq_summaries_), fmt::format("{} picked up", rq_picked_up_),
             fmt::format("{} cancelled", rq_cancelled_), fmt::format("at most {} waiting", rq_queued_max_),
             fmt::format("oldest wait {} ms", ms(rq_oldest_ms_)), fmt::format("{} worker threads", rq_threads_max_)});
  }
  if (handoff_.count() == 0) return;
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& name, const Distribution& d) {
    rows.push_back({name, count_text(d.count()), ms(d.percentile(0.5)), ms(d.percentile(0.99)), ms(d.max())});
  };
  row("all", handoff_);
  std::map<std::string, double> by_count;
  for (const auto& [w, d] : handoff_by_worker_) by_count[w] = static_cast<double>(d.count());
  if (handoff_by_worker_.size() > 1) {
    for (const auto& [w, c] : top(
             by_count, [](double x) { return x; }, 5))
      row(w, handoff_by_worker_.at(w));
  }
  table(out, {{"worker", 24}, {"count", 8, true}, {"p50 ms", 9, true}, {"p99 ms", 9, true}, {"max ms", 9, true}}, rows);
}

void Report::render_host_net(std::string& out) const {
  if (snapshots_ == 0) return;
  heading(out, fmt::format("Host network health  [host_net_health: {} snapshots]", snapshots_));
  const Event& s = last_snapshot_;
  out += fmt::format("  last: {} established in / {} out, {} time_wait, {} close_wait, {} syn_sent, {} syn_recv\n",
                     str(s, "established_inbound", "?"), str(s, "established_outbound", "?"), str(s, "time_wait", "?"),
                     str(s, "close_wait", "?"), str(s, "syn_sent", "?"), str(s, "syn_recv", "?"));
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

std::string Report::render() const {
  std::string out;
  std::vector<std::string> counts;
  for (const auto& [metric, n] : per_metric_) counts.push_back(fmt::format("{} {}", metric, n));
  if (counts.empty()) counts.push_back("none");
  wrapped(out, "Events:", counts);
  render_cpu(out);
  render_gil(out);
  render_gc(out);
  render_off_cpu(out);
  render_tcp(out);
  render_handoff(out);
  render_host_net(out);
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
