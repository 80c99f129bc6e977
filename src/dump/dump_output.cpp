// SPDX-License-Identifier: Apache-2.0
#include "dump/dump_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "dump/deadlocks.hpp"
#include "dump/waits.hpp"
#include "util/text.hpp"

namespace pyebpf::dump {
namespace {

const DumpedThread* find_thread(const DumpedProcess& p, pid_t tid) {
  for (const auto& t : p.threads)
    if (static_cast<pid_t>(t.raw.hdr.tid) == tid) return &t;
  return nullptr;
}

std::string who(const DumpedProcess& p, pid_t tid) {
  const DumpedThread* t = find_thread(p, tid);
  return t ? fmt::format("{} ({})", t->thread_name, tid) : fmt::format("tid {}", tid);
}

std::string for_how_long(const DumpedThread& t) {
  return t.state_ms ? human_duration(*t.state_ms) : "?";
}

// Leaf first: what a person looks for first in a native or kernel stack.
std::string leaf_first(const std::vector<stack::NativeFrame>& frames) {
  std::string out;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!out.empty()) out += " < ";
    stack::append_text(out, *it);
  }
  return out;
}

std::string fit(std::string text, std::size_t width) {
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text;
}

void process_text(std::string& out, const DumpedProcess& p) {
  out += fmt::format("Process {} ({}), {}: {} threads\n", p.pid, p.comm, p.python, p.threads.size());
  for (const auto& problem : p.problems) out += "  note: " + problem + "\n";
  if (p.threads.empty()) return;
  out +=
      fmt::format("  {:>7}  {:<18} {:<16} {:>9}  {:<5}  {}\n", "TID", "THREAD", "STATE", "FOR", "GIL", "WAITING FOR");
  for (const auto& t : p.threads) {
    std::string waiting = t.wait.text.empty() ? "-" : t.wait.text;
    if (t.in_gc) waiting = "(in a garbage collection) " + waiting;
    out += fmt::format("  {:>7}  {:<18} {:<16} {:>9}  {:<5}  {}\n", t.raw.hdr.tid, fit(t.thread_name, 18),
                       fit(t.state, 16), for_how_long(t), t.gil.empty() ? "-" : t.gil, waiting);
  }
  // Cycles of threads waiting on each other, each once.
  std::set<std::vector<pid_t>> cycles;
  for (const auto& t : p.threads)
    if (!t.deadlock.empty()) cycles.insert(canonical_cycle(t.deadlock));
  for (const auto& cycle : cycles) {
    out += "\n  DEADLOCK: ";
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const DumpedThread* t = find_thread(p, cycle[i]);
      out += (i ? "; " : "") + who(p, cycle[i]) + " waits on " + (t ? t->wait.text : "?");
    }
    out += ".\n";
  }
  // Threads waiting on one same object whose holder is not known.
  std::map<std::uint64_t, std::vector<const DumpedThread*>> by_object;
  for (const auto& t : p.threads)
    if (t.wait.address && t.wait.kind != "gil" && !t.waits_for) by_object[t.wait.address].push_back(&t);
  for (const auto& [address, waiters] : by_object) {
    if (waiters.size() < 2) continue;
    out += fmt::format("\n  {} threads wait on {} (its holder is not recorded):", waiters.size(), hex(address));
    for (const auto* t : waiters) out += " " + who(p, static_cast<pid_t>(t->raw.hdr.tid));
    out += "\n";
  }
  for (const auto& t : p.threads) {
    out += fmt::format("\nThread {} \"{}\": {} for {}", t.raw.hdr.tid, t.thread_name, t.state, for_how_long(t));
    if (!t.syscall.empty()) out += " in " + t.syscall;
    if (!t.wait.text.empty()) out += ", waiting for " + t.wait.text;
    if (!t.gil.empty()) out += t.gil == "holds" ? "; holds the GIL" : "";
    if (t.in_gc) out += "; collecting garbage";
    out += "\n";
    if (!t.py_stack.empty()) {
      out += "  Python (most recent call last):\n";
      for (const auto& f : t.py_stack) out += "    " + stack::text_of(f) + "\n";
    }
    if (!t.py_problem.empty()) out += "  Python stack: " + t.py_problem + "\n";
    if (!t.native_stack.empty()) out += "  native: " + leaf_first(t.native_stack) + "\n";
    if (!t.kernel_stack.empty()) out += "  kernel: " + leaf_first(t.kernel_stack) + "\n";
  }
}

}  // namespace

const ThreadDumpSchema& thread_dump_schema() {
  static const ThreadDumpSchema schema;
  return schema;
}

void fill_record(sinks::Record& r, const DumpedProcess& p, const DumpedThread& t, const std::string& env,
                 const WallClock& clock) {
  namespace f = sinks::thread_fields;
  const auto& s = dynamic_cast<const ThreadDumpSchema&>(r.schema());
  const std::int64_t us = clock.epoch_us(t.raw.hdr.ts_ns);
  r.clear();
  r.set_text(f::env, env);
  r.set_time(f::ts, us);
  r.set_int(f::ts_us, us);
  r.set_uint(f::pid, t.raw.hdr.pid);
  r.set_uint(f::tid, t.raw.hdr.tid);
  r.set_uint(f::container_pid, t.raw.hdr.ns_pid);
  r.set_uint(f::container_tid, t.raw.hdr.ns_tid);
  r.set_text(f::comm, p.comm);
  r.set_text(f::thread_name, t.thread_name);
  r.set_text(s.state, t.state);
  if (t.state_ms)
    r.set_float(s.state_ms, *t.state_ms);
  else
    r.set_null(s.state_ms);
  auto text_or_null = [&](sinks::FieldId field, const std::string& text) {
    if (text.empty())
      r.set_null(field);
    else
      r.set_text(field, text);
  };
  text_or_null(s.syscall, t.syscall);
  text_or_null(s.wait_kind, t.wait.kind);
  text_or_null(s.wait, t.wait.text);
  if (t.wait.object.is_null())
    r.set_null(s.wait_object);
  else
    r.set_json(s.wait_object, t.wait.object);
  if (t.waits_for)
    r.set_uint(s.waits_for_tid, static_cast<std::uint64_t>(*t.waits_for));
  else
    r.set_null(s.waits_for_tid);
  if (t.deadlock.empty())
    r.set_null(s.deadlock);
  else
    r.set_json(s.deadlock, nlohmann::ordered_json(t.deadlock));
  text_or_null(s.gil, t.gil);
  r.set_bool(s.in_gc, t.in_gc);
  r.set_uint(s.cpu, t.raw.hdr.cpu);
  r.set_uint(s.voluntary_switches, t.raw.voluntary_switches);
  r.set_uint(s.involuntary_switches, t.raw.involuntary_switches);
  r.begin_native_stack(s.kernel_stack);
  for (const auto& frame : t.kernel_stack) r.add_native_frame(frame);
  r.begin_native_stack(s.native_stack);
  for (const auto& frame : t.native_stack) r.add_native_frame(frame);
  r.begin_py_stack(s.py_stack);
  for (const auto& frame : t.py_stack) r.add_py_frame(frame);
  r.set_uint(s.py_stack_depth, t.py_stack.size());
  text_or_null(s.py_stack_problem, t.py_problem);
}

std::string dump_text(const std::vector<DumpedProcess>& processes, const WallClock& clock) {
  std::string out;
  for (const auto& p : processes) {
    if (!out.empty()) out += "\n";
    const std::uint64_t ts = p.threads.empty() ? monotonic_ns() : p.threads.front().raw.hdr.ts_ns;
    out += iso8601_utc(clock.epoch_us(ts)) + "  ";
    process_text(out, p);
  }
  return out;
}

}  // namespace pyebpf::dump
