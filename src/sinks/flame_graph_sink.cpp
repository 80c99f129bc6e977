// SPDX-License-Identifier: Apache-2.0
#include "sinks/flame_graph_sink.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "pyebpf/error.hpp"
#include "sinks/stacks.hpp"

namespace pyebpf::sinks {
namespace {

constexpr const char* kKindName[] = {"CPU", "off-CPU", "GIL wait"};
constexpr const char* kKindSuffix[] = {"", "off_cpu", "gil_wait"};

long long_field(const Event& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<long>() : 0;
}

double double_field(const Event& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0;
}

std::string string_field(const Event& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Writes `text` to `path` through a temporary file and rename(2).
bool write_atomically(const std::string& path, const std::string& text, std::string& error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

}  // namespace

FlameGraphSink::FlameGraphSink(Options options) : options_(std::move(options)), last_write_(SteadyClock::now()) {
  // Fail at start, not after an hour, if the files cannot be written.
  for (const auto* path : {&options_.folded_path, &options_.speedscope_path}) {
    if (path->empty()) continue;
    std::string error;
    if (!write_atomically(*path, *path == options_.speedscope_path ? speedscope_json() : std::string(), error))
      throw Error("flame graphs: " + error, "check that the directory exists and is writable");
  }
}

std::string FlameGraphSink::derived_path(const std::string& path, const std::string& suffix) {
  if (suffix.empty()) return path;
  auto slash = path.rfind('/');
  auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

std::uint32_t FlameGraphSink::frame_id(const std::string& name) {
  auto [it, added] = frame_ids_.try_emplace(name, static_cast<std::uint32_t>(frames_.size()));
  if (added) frames_.push_back(name);
  return it->second;
}

void FlameGraphSink::add(Kind kind, const Event& e, const std::vector<std::string>& stack, double weight) {
  if (!(weight > 0)) return;
  // Time a Python thread spent with no Python frame (starting, exiting, pure
  // C) is still its time: it gets a frame of its own instead of vanishing.
  static const std::vector<std::string> kNoPythonFrames{kNoPythonFramesLabel};
  const auto& frames = stack.empty() ? kNoPythonFrames : stack;
  long pid = long_field(e, "pid"), tid = long_field(e, "tid");
  auto [it, added] = profiles_.try_emplace({kind, pid, tid});
  Profile& p = it->second;
  if (added) {
    p.kind = kind;
    p.pid = pid;
    p.tid = tid;
  }
  std::string name = string_field(e, "thread_name");
  if (!name.empty()) p.thread = name;  // latest name wins: threads get named after they start
  std::vector<std::uint32_t> ids;
  ids.reserve(frames.size());
  for (const auto& f : frames) ids.push_back(frame_id(f));
  auto [pos, fresh] = p.index.try_emplace(ids, p.stacks.size());
  if (fresh) p.stacks.emplace_back(std::move(ids), 0.0);
  p.stacks[pos->second].second += weight;
  p.total += weight;
  ++events_[kind];
}

void FlameGraphSink::write(const Event& e) {
  std::string metric = string_field(e, "metric");
  if (metric == "py_stack") {
    add(Cpu, e, split_frames(string_field(e, "stack")), 1.0);
  } else if (metric == "off_cpu") {
    auto frames = split_frames(string_field(e, "py_stack"));
    for (const auto& k : kernel_frames_root_first(e)) frames.push_back(k + "_[k]");
    add(OffCpu, e, frames, double_field(e, "off_cpu_ms"));
  } else if (metric == "gil_wait") {
    auto frames = split_frames(string_field(e, "waiter_py_stack"));
    std::string holder = string_field(e, "holder_thread_name");
    if (holder.empty()) holder = long_field(e, "holder_tid") ? fmt::format("tid {}", long_field(e, "holder_tid")) : "?";
    frames.push_back("GIL held by " + holder);
    add(Gil, e, frames, double_field(e, "duration_ms"));
  }
}

void FlameGraphSink::flush() {
  if (closed_) return;
  auto now = SteadyClock::now();
  if (now - last_write_ >= std::chrono::seconds(60)) {
    last_write_ = now;
    write_files();
  }
}

void FlameGraphSink::begin_close(SteadyClock::time_point) {
  if (closed_) return;
  closed_ = true;
  write_files();
}

std::string FlameGraphSink::folded_text(Kind kind) const {
  std::map<std::vector<std::uint32_t>, double> merged;  // threads merged: one graph per kind
  for (const auto& [key, p] : profiles_) {
    if (p.kind != kind) continue;
    for (const auto& [stack, w] : p.stacks) merged[stack] += w;
  }
  std::vector<std::pair<std::string, double>> lines;
  for (const auto& [stack, w] : merged) {
    std::string line;
    for (auto id : stack) line += (line.empty() ? "" : ";") + frames_[id];
    lines.emplace_back(std::move(line), w);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& [line, w] : lines) {
    // CPU: sample counts; time kinds: microseconds (whole numbers, as the format wants).
    auto count = static_cast<long long>(kind == Cpu ? w : std::llround(w * 1000.0));
    if (count > 0) out += fmt::format("{} {}\n", line, count);
  }
  return out;
}

std::string FlameGraphSink::speedscope_json() const {
  using Json = nlohmann::json;
  Json frames = Json::array();
  for (const auto& f : frames_) {
    if (f.size() > 4 && f.compare(f.size() - 4, 4, "_[k]") == 0) {
      frames.push_back({{"name", f.substr(0, f.size() - 4) + " [kernel]"}});
    } else if (auto py = parse_py_frame(f)) {
      frames.push_back({{"name", py->function}, {"file", py->file}, {"line", py->line}});
    } else {
      frames.push_back({{"name", f}});
    }
  }
  std::vector<const Profile*> order;
  for (const auto& [key, p] : profiles_) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Profile* a, const Profile* b) {
    return std::tie(a->kind, b->total) < std::tie(b->kind, a->total);  // by kind, then heaviest first
  });
  const double ms_per_sample = 1000.0 / std::max(1u, options_.pystack_frequency);
  Json profiles = Json::array();
  for (const Profile* p : order) {
    Json samples = Json::array(), weights = Json::array();
    double scale = p->kind == Cpu ? ms_per_sample : 1.0;
    double total = 0;
    for (const auto& [stack, w] : p->stacks) {
      samples.push_back(stack);
      weights.push_back(w * scale);
      total += w * scale;
    }
    std::string thread = p->thread.empty() ? "thread" : p->thread;
    profiles.push_back({{"type", "sampled"},
                        {"name", fmt::format("{} (pid {} tid {}) · {}", thread, p->pid, p->tid, kKindName[p->kind])},
                        {"unit", "milliseconds"},
                        {"startValue", 0},
                        {"endValue", total},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}});
  }
  Json doc = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
              {"name", options_.title},
              {"exporter", options_.exporter},
              {"activeProfileIndex", 0},
              {"shared", {{"frames", std::move(frames)}}},
              {"profiles", std::move(profiles)}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void FlameGraphSink::write_files() {
  std::string error;
  bool ok = true;
  if (!options_.folded_path.empty()) {
    for (int k = 0; k < kKinds; ++k) {
      if (k != Cpu && events_[k] == 0) continue;
      ok &= write_atomically(derived_path(options_.folded_path, kKindSuffix[k]), folded_text(static_cast<Kind>(k)),
                             error);
    }
  }
  if (!options_.speedscope_path.empty()) ok &= write_atomically(options_.speedscope_path, speedscope_json(), error);
  if (!ok && error != last_error_) spdlog::warn("flame graphs: {}", error);
  last_error_ = ok ? std::string() : error;
}

std::string FlameGraphSink::summary() const {
  std::vector<std::string> parts;
  if (!options_.folded_path.empty()) {
    for (int k = 0; k < kKinds; ++k) {
      if (k != Cpu && events_[k] == 0) continue;
      parts.push_back(fmt::format("{} ({}, {} events)", derived_path(options_.folded_path, kKindSuffix[k]),
                                  kKindName[k], events_[k]));
    }
  }
  if (!options_.speedscope_path.empty())
    parts.push_back(fmt::format("{} ({} profiles)", options_.speedscope_path, profiles_.size()));
  std::string out = "flame graphs: wrote ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  if (!last_error_.empty()) out += "; last write failed: " + last_error_;
  return out;
}

}  // namespace pyebpf::sinks
