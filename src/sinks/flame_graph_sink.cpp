// SPDX-License-Identifier: Apache-2.0
#include "sinks/flame_graph_sink.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "pyebpf/error.hpp"

namespace pyebpf::sinks {
namespace {

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

FlameGraphSink::FlameGraphSink(Options options)
    : options_(std::move(options)), events_(options_.kinds.size()), last_write_(SteadyClock::now()) {
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

std::uint32_t FlameGraphSink::frame_id(const FlameFrame& frame) {
  key_.assign(1, static_cast<char>(frame.kind));
  key_ += frame.name;
  key_ += '\0';
  key_ += frame.file;
  key_ += '\0';
  key_ += std::to_string(frame.line);
  auto it = frame_ids_.find(key_);
  if (it != frame_ids_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(frames_.size());
  frames_.push_back({frame.kind, std::string(frame.name), std::string(frame.file), frame.line});
  frame_ids_.emplace(key_, id);
  return id;
}

void FlameGraphSink::add(std::size_t kind, const Record& r, double weight) {
  namespace f = thread_fields;
  if (!(weight > 0)) return;
  // Time a Python thread spent with no Python frame (starting, exiting, pure
  // C) is still its time: it gets a frame of its own instead of vanishing.
  if (sample_.empty()) sample_.push_back({FlameFrame::Kind::Label, kNoPythonFramesLabel});
  const std::uint64_t pid = r.uint_value(f::pid), tid = r.uint_value(f::tid);
  auto [it, added] = profiles_.try_emplace({kind, pid, tid});
  Profile& p = it->second;
  if (added) {
    p.kind = kind;
    p.pid = pid;
    p.tid = tid;
  }
  std::string_view name = r.text(f::thread_name);
  if (!name.empty()) p.thread = name;  // latest name wins: threads get named after they start
  ids_.clear();
  for (const auto& frame : sample_) ids_.push_back(frame_id(frame));
  auto pos = p.index.find(ids_);
  if (pos == p.index.end()) {
    pos = p.index.emplace(ids_, p.stacks.size()).first;
    p.stacks.emplace_back(ids_, 0.0);
  }
  p.stacks[pos->second].second += weight;
  p.total += weight;
  ++events_[kind];
}

void FlameGraphSink::write(const Record& r) {
  for (std::size_t k = 0; k < options_.kinds.size(); ++k) {
    const FlameGraphKind& kind = options_.kinds[k];
    if (kind.schema != &r.schema()) continue;
    sample_.clear();
    add(k, r, kind.sample(r, sample_));
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

std::string FlameGraphSink::folded_text(std::size_t kind) const {
  std::map<std::vector<std::uint32_t>, double> merged;  // threads merged: one graph per kind
  for (const auto& [key, p] : profiles_) {
    if (p.kind != kind) continue;
    for (const auto& [stack, w] : p.stacks) merged[stack] += w;
  }
  std::vector<std::pair<std::string, double>> lines;
  for (const auto& [stack, w] : merged) {
    std::string line;
    for (auto id : stack) {
      const Frame& f = frames_[id];
      if (!line.empty()) line += ';';
      if (f.kind == FlameFrame::Kind::Python)
        stack::append_text(line, stack::PyFrame{f.name, f.file, f.line});
      else
        line += f.name;
      if (f.kind == FlameFrame::Kind::Kernel) line += "_[k]";
    }
    lines.emplace_back(std::move(line), w);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  const double scale = options_.kinds[kind].folded_scale;
  for (const auto& [line, w] : lines) {
    auto count = std::llround(w * scale);
    if (count > 0) out += fmt::format("{} {}\n", line, count);
  }
  return out;
}

std::string FlameGraphSink::speedscope_json() const {
  using Json = nlohmann::json;
  Json frames = Json::array();
  for (const auto& f : frames_) {
    switch (f.kind) {
      case FlameFrame::Kind::Python:
        frames.push_back({{"name", f.name}, {"file", f.file}, {"line", f.line}});
        break;
      case FlameFrame::Kind::Kernel:
        frames.push_back({{"name", f.name + " [kernel]"}});
        break;
      case FlameFrame::Kind::Label:
        frames.push_back({{"name", f.name}});
        break;
    }
  }
  std::vector<const Profile*> order;
  for (const auto& [key, p] : profiles_) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Profile* a, const Profile* b) {
    return std::tie(a->kind, b->total) < std::tie(b->kind, a->total);  // by kind, then heaviest first
  });
  Json profiles = Json::array();
  for (const Profile* p : order) {
    const FlameGraphKind& kind = options_.kinds[p->kind];
    Json samples = Json::array(), weights = Json::array();
    double total = 0;
    for (const auto& [stack, w] : p->stacks) {
      samples.push_back(stack);
      weights.push_back(w * kind.speedscope_ms);
      total += w * kind.speedscope_ms;
    }
    std::string thread = p->thread.empty() ? "thread" : p->thread;
    profiles.push_back({{"type", "sampled"},
                        {"name", fmt::format("{} (pid {} tid {}) · {}", thread, p->pid, p->tid, kind.name)},
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
    for (std::size_t k = 0; k < options_.kinds.size(); ++k) {
      if (k != 0 && events_[k] == 0) continue;
      ok &= write_atomically(derived_path(options_.folded_path, options_.kinds[k].file_suffix), folded_text(k), error);
    }
  }
  if (!options_.speedscope_path.empty()) ok &= write_atomically(options_.speedscope_path, speedscope_json(), error);
  if (!ok && error != last_error_) spdlog::warn("flame graphs: {}", error);
  last_error_ = ok ? std::string() : error;
}

std::string FlameGraphSink::summary() const {
  std::vector<std::string> parts;
  if (!options_.folded_path.empty()) {
    for (std::size_t k = 0; k < options_.kinds.size(); ++k) {
      if (k != 0 && events_[k] == 0) continue;
      parts.push_back(fmt::format("{} ({}, {} events)",
                                  derived_path(options_.folded_path, options_.kinds[k].file_suffix),
                                  options_.kinds[k].name, events_[k]));
    }
  }
  if (!options_.speedscope_path.empty())
    parts.push_back(fmt::format("{} ({} profiles)", options_.speedscope_path, profiles_.size()));
  std::string out = fmt::format("flame graphs: wrote {}", fmt::join(parts, ", "));
  if (!last_error_.empty()) out += "; last write failed: " + last_error_;
  return out;
}

}  // namespace pyebpf::sinks
