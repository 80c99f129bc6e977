// SPDX-License-Identifier: Apache-2.0
#include "live/tally.hpp"

#include <algorithm>
#include <set>

namespace pyebpf::live {

namespace f = sinks::thread_fields;

namespace {

// Bounds for a view left open for days on a service whose threads come and
// go: threads beyond the first kMaxThreads of a window are counted together
// (tid 0), functions and reasons beyond these are left out of the lists
// (their time still counts in the thread's totals).
constexpr std::size_t kMaxThreads = 4096;
constexpr std::size_t kMaxFunctionsPerThread = 4096;
constexpr std::size_t kMaxReasons = 1024;
constexpr std::string_view kOtherThreads = "(other threads)";

ThreadTime& thread_of(Window& w, const sinks::Record& r) {
  auto tid = r.has(f::tid) ? static_cast<std::uint32_t>(r.uint_value(f::tid)) : 0;
  if (!w.threads.count(tid) && w.threads.size() >= kMaxThreads) tid = 0;
  ThreadTime& t = w.threads[tid];
  const std::string_view name = tid ? sinks::report::thread_of(r) : kOtherThreads;
  if (t.name != name) t.name = name;  // the latest: a thread may be named after it started
  if (r.has(f::pid)) t.pid = static_cast<std::uint32_t>(r.uint_value(f::pid));
  return t;
}

void note_kind(std::vector<std::string>& kinds, std::string_view kind) {
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.emplace_back(kind);
}

FunctionTime* function(ThreadTime& t, const stack::PyFrame& frame) {
  FunctionKey key{std::string(frame.function), std::string(frame.file), frame.first_line};
  auto it = t.functions.find(key);
  if (it != t.functions.end()) return &it->second;
  if (t.functions.size() >= kMaxFunctionsPerThread) return nullptr;
  return &t.functions[std::move(key)];
}

}  // namespace

std::string WaitTime::main_reason() const {
  auto it = std::max_element(reasons.begin(), reasons.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
  return it == reasons.end() ? std::string() : it->first;
}

void Tally::cpu_sample(const sinks::Record& r, sinks::FieldId stack, double ms) {
  const std::size_t depth = r.kind(stack) == sinks::Record::Kind::PyStack ? r.size(stack) : 0;
  both([&](Window& w) {
    ++w.samples;
    w.cpu_ms += ms;
    ThreadTime& t = thread_of(w, r);
    t.cpu_ms += ms;
    if (depth == 0) return;
    if (auto* leaf = function(t, r.py_frame(stack, depth - 1))) leaf->self_ms += ms;
    std::set<FunctionTime*> seen;  // recursion counts once
    for (std::size_t i = 0; i < depth; ++i) {
      auto* fn = function(t, r.py_frame(stack, i));
      if (fn && seen.insert(fn).second) fn->total_ms += ms;
    }
  });
}

void Tally::wait(const sinks::Record& r, std::string_view kind, double ms, std::string_view reason) {
  both([&](Window& w) {
    note_kind(w.wait_kinds, kind);
    auto& threads = thread_of(w, r).waits;
    auto it = threads.find(kind);
    if (it == threads.end()) it = threads.emplace(std::string(kind), WaitTime{}).first;
    it->second.ms += ms;
    if (reason.empty()) return;
    auto reason_it = it->second.reasons.find(reason);
    if (reason_it == it->second.reasons.end()) {
      if (it->second.reasons.size() >= kMaxReasons) return;
      reason_it = it->second.reasons.emplace(std::string(reason), 0.0).first;
    }
    reason_it->second += ms;
  });
}

void Tally::pause(std::string_view kind, double ms) {
  both([&](Window& w) {
    note_kind(w.pause_kinds, kind);
    auto it = w.pauses.find(kind);
    if (it == w.pauses.end()) it = w.pauses.emplace(std::string(kind), sinks::report::Distribution(10'000)).first;
    it->second.add(ms);
  });
}

Window Tally::roll(double seconds, std::uint64_t lost) {
  total_.seconds += seconds;
  interval_.seconds = seconds;
  interval_.lost = lost - total_.lost;
  total_.lost = lost;
  Window done = std::move(interval_);
  interval_ = Window{};
  return done;
}

}  // namespace pyebpf::live
