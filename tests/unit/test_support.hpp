// SPDX-License-Identifier: Apache-2.0
// What unit tests share: the command line as main() parses it, and a
// TargetLookup with hand-made frame names, so decoders run on synthetic BPF
// events without root, a skeleton or a live process.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "app/cli.hpp"
#include "common.h"
#include "python.h"
#include "sinks/json_writer.hpp"
#include "trackers/common/event_fields.hpp"

namespace pyebpf::test {

// parse_command_line on "pyebpf -p 1 -e t" + args; nullopt on a usage error.
inline std::optional<app::Options> parse_args(std::vector<std::string> args) {
  args.insert(args.begin(), {"pyebpf", "-p", "1", "-e", "t"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int code = 0;
  return app::parse_command_line(static_cast<int>(argv.size()), argv.data(), code);
}

// A tracker's parsed options.
template <typename Options>
const Options& tracker_options(const app::Options& o, const std::string& tracker) {
  return dynamic_cast<const Options&>(*o.trackers.at(tracker));
}

// Names code addresses as a symbolizer would: function and file per code
// object, line = its first line + the instruction offset.
class FakeResolver : public python::FrameResolver {
 public:
  void add(std::uint64_t code, std::string function, std::string file, int first_line) {
    code_[code] = {std::move(function), std::move(file), first_line};
  }
  stack::PyFrame resolve(const pyebpf_py_frame& frame) override {
    auto it = code_.find(frame.code);
    if (it == code_.end()) return python::kUnresolved;
    return {it->second.function, it->second.file, it->second.first_line + frame.instr};
  }

 private:
  struct Code {
    std::string function, file;
    int first_line;
  };
  std::map<std::uint64_t, Code> code_;
};

class FakeTargets : public trackers::TargetLookup {
 public:
  const std::vector<trackers::Target>& all() const override { return targets_; }
  python::FrameResolver* frames(pid_t pid) override {
    auto it = python_.find(pid);
    return it == python_.end() ? nullptr : &it->second;
  }
  std::optional<std::string> thread_name(pid_t pid, std::uint64_t ident, std::uint32_t ns_tid, bool) override {
    auto it = names.find({pid, ident, ns_tid});
    if (it == names.end()) return std::nullopt;
    return it->second;
  }
  void count_event(pid_t pid, const std::string&) override { ++counted[pid]; }

  // `pid` is a Python target whose frames `resolver` names.
  FakeResolver& python(pid_t pid) { return python_[pid]; }

  std::map<std::tuple<pid_t, std::uint64_t, std::uint32_t>, std::string> names;  // threading names
  std::map<pid_t, std::uint64_t> counted;

 private:
  std::vector<trackers::Target> targets_;
  std::map<pid_t, FakeResolver> python_;
};

// A decoder's context over FakeTargets.
struct DecoderFixture {
  std::string env = "test";
  FakeTargets targets;
  WallClock clock;
  trackers::DecodeContext ctx() { return {env, targets, clock}; }
};

// An event header as BPF fills it: comm "python3", the thread's ident 0x7f00 + tid.
inline pyebpf_event_header header(std::uint32_t pid, std::uint32_t tid, std::uint64_t ts_ns = 1'000'000'000) {
  pyebpf_event_header h{};
  h.ts_ns = ts_ns;
  h.thread_id = 0x7f0000 + tid;
  h.pid = pid;
  h.tid = tid;
  h.ns_pid = pid;
  h.ns_tid = tid;
  h.cpu = 1;
  std::snprintf(h.comm, sizeof(h.comm), "python3");
  return h;
}

// Frames leaf first, as BPF records them: (code address, instruction offset).
inline void fill_stack(pyebpf_py_stack& st, const std::vector<std::pair<std::uint64_t, int>>& leaf_first) {
  st.depth = static_cast<std::uint16_t>(leaf_first.size());
  for (std::size_t i = 0; i < leaf_first.size(); ++i) {
    st.frames[i].code = leaf_first[i].first;
    st.frames[i].instr = leaf_first[i].second;
  }
}

// The record as its JSON line, parsed back (keys in order).
inline nlohmann::ordered_json json_of(const sinks::Record& r) {
  return nlohmann::ordered_json::parse(sinks::to_json_line(r));
}

// The record's field names, in the order the JSON line prints them.
inline std::vector<std::string> keys_of(const sinks::Record& r) {
  const nlohmann::ordered_json line = json_of(r);
  std::vector<std::string> out;
  for (auto it = line.begin(); it != line.end(); ++it) out.push_back(it.key());
  return out;
}

}  // namespace pyebpf::test
