// SPDX-License-Identifier: Apache-2.0
#include "stack/frames.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>

namespace pyebpf::stack {

void append_text(std::string& out, const PyFrame& frame) {
  // By hand: fmt's format-string parse per frame was a tenth of pyebpf's
  // CPU while writing a GIL convoy's stacks.
  char line[16];
  auto [end, ec] = std::to_chars(line, line + sizeof(line), frame.line);
  out.append(frame.function);
  out += " (";
  out.append(frame.file);
  out += ':';
  out.append(line, end);
  out += ')';
}

void append_text(std::string& out, const NativeFrame& frame) {
  auto it = std::back_inserter(out);
  switch (frame.kind) {
    case NativeFrame::Kind::Symbol:
      out += frame.symbol;
      if (!frame.module.empty()) {
        out += " [";
        out += frame.module;
        out += ']';
      }
      break;
    case NativeFrame::Kind::InModule:
      fmt::format_to(it, "{} [{}+{:#x}]", kUnknown, frame.module, frame.address);
      break;
    case NativeFrame::Kind::Address:
      fmt::format_to(it, "{} [{:#x}]", kUnknown, frame.address);
      break;
    case NativeFrame::Kind::Truncated:
      out += kTruncated;
      break;
  }
}

std::string text_of(const PyFrame& frame) {
  std::string out;
  append_text(out, frame);
  return out;
}

std::string text_of(const NativeFrame& frame) {
  std::string out;
  append_text(out, frame);
  return out;
}

std::optional<PyFrame> parse_py_frame(std::string_view text) {
  if (text.size() < 5 || text.back() != ')') return std::nullopt;
  auto paren = text.rfind(" (");
  auto colon = text.rfind(':');
  if (paren == std::string_view::npos || colon == std::string_view::npos || colon < paren) return std::nullopt;
  std::string_view digits = text.substr(colon + 1, text.size() - colon - 2);
  std::int32_t line = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
  if (digits.empty() || digits.size() > 9 || ec != std::errc() || end != digits.data() + digits.size() ||
      digits.front() == '-')
    return std::nullopt;
  return PyFrame{text.substr(0, paren), text.substr(paren + 2, colon - paren - 2), line};
}

namespace {

std::optional<std::uint64_t> hex_number(std::string_view text) {
  if (text.size() < 3 || text.substr(0, 2) != "0x") return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

NativeFrame parse_native_frame(std::string_view text) {
  NativeFrame frame;
  if (text == kTruncated) {
    frame.kind = NativeFrame::Kind::Truncated;
    return frame;
  }
  std::string_view name = text, module;
  if (text.size() > 3 && text.back() == ']') {
    auto open = text.rfind(" [");
    if (open != std::string_view::npos) {
      name = text.substr(0, open);
      module = text.substr(open + 2, text.size() - open - 3);
    }
  }
  if (name == kUnknown) {
    if (auto address = hex_number(module)) {
      frame.kind = NativeFrame::Kind::Address;
      frame.address = *address;
      return frame;
    }
    auto plus = module.rfind('+');
    if (plus != std::string_view::npos) {
      if (auto offset = hex_number(module.substr(plus + 1))) {
        frame.kind = NativeFrame::Kind::InModule;
        frame.module = module.substr(0, plus);
        frame.address = *offset;
        return frame;
      }
    }
  }
  if (auto plus = name.find("+0x"); plus != std::string_view::npos) name = name.substr(0, plus);
  frame.symbol = name;
  frame.module = module;
  return frame;
}

}  // namespace pyebpf::stack
