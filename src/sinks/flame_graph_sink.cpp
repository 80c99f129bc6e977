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
#include "sinks/flame_graph_html.hpp"
#include "sinks/pprof_format.hpp"
#include "util/gzip.hpp"

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

void append_py_frames(const Record& r, FieldId f, std::vector<FlameFrame>& frames) {
  for (std::size_t i = 0; r.kind(f) == Record::Kind::PyStack && i < r.size(f); ++i) {
    stack::PyFrame frame = r.py_frame(f, i);
    frames.push_back({FlameFrame::Kind::Python, frame.function, frame.file, frame.line, frame.first_line});
  }
}

FlameGraphSink::FlameGraphSink(Options options) : options_(std::move(options)), last_write_(SteadyClock::now()) {
  graphs_.kinds = std::move(options_.kinds);
  graphs_.events.resize(graphs_.kinds.size());
  // Fail at start, not after an hour, if the files cannot be written.
  for (const auto& [path, content] : files()) {
    std::string error;
    if (!write_atomically(path, content(), error))
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
  auto id = static_cast<std::uint32_t>(graphs_.frames.size());
  graphs_.frames.push_back(
      {frame.kind, std::string(frame.name), std::string(frame.file), frame.line, frame.first_line});
  frame_ids_.emplace(key_, id);
  return id;
}

void FlameGraphSink::add(std::size_t kind, const Record& r, double weight) {
  namespace f = thread_fields;
  if (!(weight > 0)) return;
  // Time a Python thread spent with no Python frame (starting, exiting, pure
  // C) is still its time: it gets a frame of its own instead of vanishing.
  if (sample_.empty()) sample_.push_back({FlameFrame::Kind::Label, kNoPythonFramesLabel});
  const auto pid = static_cast<std::uint64_t>(r.number(f::pid).value_or(0));
  const auto tid = static_cast<std::uint64_t>(r.number(f::tid).value_or(0));
  auto [it, added] = graphs_.profiles.try_emplace({kind, pid, tid});
  FlameGraphs::Profile& p = it->second;
  if (added) {
    p.kind = kind;
    p.pid = pid;
    p.tid = tid;
    p.env = r.text(f::env);
  }
  std::string_view name = r.text(f::thread_name);
  if (!name.empty()) p.thread = name;  // latest name wins: threads get named after they start
  if (r.kind(f::ts_us) == Record::Kind::UInt || r.kind(f::ts_us) == Record::Kind::Int) {
    const std::int64_t ts = r.int_value(f::ts_us);
    if (graphs_.first_us == 0 || ts < graphs_.first_us) graphs_.first_us = ts;
    graphs_.last_us = std::max(graphs_.last_us, ts);
  }
  ids_.clear();
  for (const auto& frame : sample_) ids_.push_back(frame_id(frame));
  auto pos = p.index.find(ids_);
  if (pos == p.index.end()) {
    pos = p.index.emplace(ids_, p.stacks.size()).first;
    p.stacks.push_back(FlameGraphs::Stack{ids_, 0.0});
  }
  p.stacks[pos->second].weight += weight;
  p.total += weight;
  ++graphs_.events[kind];
}

void FlameGraphSink::write(const Record& r) {
  for (std::size_t k = 0; k < graphs_.kinds.size(); ++k) {
    const FlameGraphKind& kind = graphs_.kinds[k];
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
  for (const auto& [key, p] : graphs_.profiles) {
    if (p.kind != kind) continue;
    for (const auto& s : p.stacks) merged[s.frames] += s.weight;
  }
  std::vector<std::pair<std::string, double>> lines;
  for (const auto& [stack, w] : merged) {
    std::string line;
    for (auto id : stack) {
      const FlameGraphs::Frame& f = graphs_.frames[id];
      if (!line.empty()) line += ';';
      if (f.kind == FlameFrame::Kind::Python)
        stack::append_text(line, stack::PyFrame{f.name, f.file, f.line});
      else
        line += f.name;
      if (f.kind == FlameFrame::Kind::Kernel) line += "_[k]";
      if (f.kind == FlameFrame::Kind::Native && !f.file.empty()) line += " [" + f.file + "]";
    }
    lines.emplace_back(std::move(line), w);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  const double scale = graphs_.kinds[kind].folded_scale;
  for (const auto& [line, w] : lines) {
    auto count = std::llround(w * scale);
    if (count > 0) out += fmt::format("{} {}\n", line, count);
  }
  return out;
}

std::string FlameGraphSink::speedscope_json() const {
  using Json = nlohmann::json;
  Json frames = Json::array();
  for (const auto& f : graphs_.frames) {
    switch (f.kind) {
      case FlameFrame::Kind::Python:
        frames.push_back({{"name", f.name}, {"file", f.file}, {"line", f.line}});
        break;
      case FlameFrame::Kind::Native:
        frames.push_back({{"name", f.file.empty() ? f.name : f.name + " [" + f.file + "]"}, {"file", f.file}});
        break;
      case FlameFrame::Kind::Kernel:
        frames.push_back({{"name", f.name + " [kernel]"}});
        break;
      case FlameFrame::Kind::Label:
        frames.push_back({{"name", f.name}});
        break;
    }
  }
  std::vector<const FlameGraphs::Profile*> order;
  for (const auto& [key, p] : graphs_.profiles) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const FlameGraphs::Profile* a, const FlameGraphs::Profile* b) {
    return std::tie(a->kind, b->total) < std::tie(b->kind, a->total);  // by kind, then heaviest first
  });
  Json profiles = Json::array();
  for (const FlameGraphs::Profile* p : order) {
    const FlameGraphKind& kind = graphs_.kinds[p->kind];
    Json samples = Json::array(), weights = Json::array();
    double total = 0;
    for (const auto& s : p->stacks) {
      samples.push_back(s.frames);
      weights.push_back(s.weight * kind.speedscope_ms);
      total += s.weight * kind.speedscope_ms;
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

std::vector<std::pair<std::string, std::function<std::string()>>> FlameGraphSink::files() const {
  std::vector<std::pair<std::string, std::function<std::string()>>> out;
  for (std::size_t k = 0; k < graphs_.kinds.size(); ++k) {
    if (!graphs_.written(k)) continue;
    const std::string& suffix = graphs_.kinds[k].file_suffix;
    if (!options_.folded_path.empty())
      out.emplace_back(derived_path(options_.folded_path, suffix), [this, k] { return folded_text(k); });
    if (!options_.pprof_path.empty()) {
      out.emplace_back(derived_path(options_.pprof_path, suffix), [this, k] {
        return gzip_compress(pprof_profile(graphs_, k, {options_.title, options_.exporter}), 6);
      });
    }
  }
  if (!options_.speedscope_path.empty())
    out.emplace_back(options_.speedscope_path, [this] { return speedscope_json(); });
  if (!options_.html_path.empty())
    out.emplace_back(options_.html_path, [this] { return flame_graph_html(graphs_, options_.title); });
  return out;
}

void FlameGraphSink::write_files() {
  std::string error;
  bool ok = true;
  for (const auto& [path, content] : files()) ok &= write_atomically(path, content(), error);
  if (!ok && error != last_error_) spdlog::warn("flame graphs: {}", error);
  last_error_ = ok ? std::string() : error;
}

std::string FlameGraphSink::summary() const {
  std::vector<std::string> parts;
  for (const std::string* path : {&options_.folded_path, &options_.pprof_path}) {
    if (path->empty()) continue;
    for (std::size_t k = 0; k < graphs_.kinds.size(); ++k) {
      if (!graphs_.written(k)) continue;
      parts.push_back(fmt::format("{} ({}, {} events)", derived_path(*path, graphs_.kinds[k].file_suffix),
                                  graphs_.kinds[k].name, graphs_.events[k]));
    }
  }
  if (!options_.speedscope_path.empty())
    parts.push_back(fmt::format("{} ({} profiles)", options_.speedscope_path, graphs_.profiles.size()));
  if (!options_.html_path.empty()) parts.push_back(fmt::format("{} (HTML)", options_.html_path));
  std::string out = fmt::format("flame graphs: wrote {}", fmt::join(parts, ", "));
  if (!last_error_.empty()) out += "; last write failed: " + last_error_;
  return out;
}

}  // namespace pyebpf::sinks
