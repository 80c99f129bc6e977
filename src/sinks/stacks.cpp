// SPDX-License-Identifier: Apache-2.0
#include "sinks/stacks.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace pyebpf::sinks {
namespace {

std::string strip_offset(std::string frame) {
  auto plus = frame.find("+0x");
  if (plus != std::string::npos) frame.resize(plus);
  auto space = frame.find(' ');
  if (space != std::string::npos) frame.resize(space);
  return frame;
}

bool scheduler_frame(const std::string& f) {
  static const std::set<std::string> names = {"schedule",
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

}  // namespace

std::vector<std::string> split_frames(const std::string& stack) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < stack.size()) {
    auto semi = stack.find(';', pos);
    if (semi == std::string::npos) semi = stack.size();
    if (semi > pos) out.push_back(stack.substr(pos, semi - pos));
    pos = semi + 1;
  }
  return out;
}

std::string leaf_frame(const std::string& stack) {
  auto semi = stack.rfind(';');
  return semi == std::string::npos ? stack : stack.substr(semi + 1);
}

std::optional<PyFrame> parse_py_frame(const std::string& frame) {
  if (frame.size() < 5 || frame.back() != ')') return std::nullopt;
  auto paren = frame.rfind(" (");
  auto colon = frame.rfind(':');
  if (paren == std::string::npos || colon == std::string::npos || colon < paren) return std::nullopt;
  std::string digits = frame.substr(colon + 1, frame.size() - colon - 2);
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return PyFrame{frame.substr(0, paren), frame.substr(paren + 2, colon - paren - 2), std::stol(digits)};
}

std::string function_of(const std::string& frame) {
  auto f = parse_py_frame(frame);
  return f ? f->function + " (" + f->file + ")" : frame;
}

std::string short_frame(const std::string& frame) {
  auto f = parse_py_frame(frame);
  if (!f) return frame;
  auto slash = f->file.rfind('/');
  return f->function + " (" + (slash == std::string::npos ? f->file : f->file.substr(slash + 1)) + ":" +
         std::to_string(f->line) + ")";
}

std::string short_stack(const std::string& stack) {
  std::string out;
  for (const auto& f : split_frames(stack)) out += (out.empty() ? "" : ";") + short_frame(f);
  return out;
}

std::vector<std::string> kernel_frames_root_first(const Event& e, const char* key) {
  std::vector<std::string> frames;
  auto it = e.find(key);
  if (it == e.end() || !it->is_array()) return frames;
  for (const auto& f : *it) frames.push_back(strip_offset(f.is_string() ? f.get<std::string>() : f.dump()));
  if (!frames.empty() && scheduler_frame(frames.front())) std::reverse(frames.begin(), frames.end());
  return frames;
}

std::string kernel_wait(const Event& e) {
  auto frames = kernel_frames_root_first(e);
  if (frames.empty()) return "-";
  static const char* prefixes[] = {"__x64_sys_", "__arm64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_", "ksys_"};
  for (const auto& f : frames) {
    for (const char* p : prefixes) {
      if (f.rfind(p, 0) == 0 && f.size() > std::strlen(p)) return f.substr(std::strlen(p));
    }
  }
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!scheduler_frame(*it)) return *it;
  }
  return frames.back();
}

}  // namespace pyebpf::sinks
