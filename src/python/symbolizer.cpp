// SPDX-License-Identifier: Apache-2.0
#include "python/symbolizer.hpp"

#include <array>

namespace pyebpf::python {

Symbolizer::Symbolizer(const ObjectReader& objects, const pyebpf_py_layout& layout, LineTableFormat format)
    : objects_(objects), layout_(layout), format_(format) {}

Symbolizer::CodeInfo Symbolizer::read_code(std::uint64_t addr) const {
  CodeInfo info;
  const ProcessMemory& mem = objects_.memory();
  ProcessMemory::Batch batch(mem);  // a dozen fields of the code object and its strings
  const OffsetsRow& off = objects_.offsets();
  if (objects_.types().code && objects_.type_of(addr) != objects_.types().code) return info;

  std::array<std::uint8_t, PYEBPF_CODE_TAG_LEN> header{};
  if (!mem.read(addr + layout_.code_tag, header.data(), header.size())) return info;
  info.tag = pyebpf_code_tag(header.data(), layout_.code_tag_len);

  auto name_field = off.field("code.qualname") ? "code.qualname" : "code.name";
  auto name_ptr = mem.read_u64(addr + off.require(name_field));
  auto file_ptr = mem.read_u64(addr + off.require("code.filename"));
  auto first_line = mem.read_value<std::int32_t>(addr + off.require("code.firstlineno"));
  if (!name_ptr || !file_ptr || !first_line) return info;
  auto name = objects_.read_str(*name_ptr);
  auto file = objects_.read_str(*file_ptr);
  if (!name || !file) return info;
  info.function = std::move(*name);
  info.file = std::move(*file);
  info.first_line = *first_line;
  auto table_field = off.field("code.linetable") ? "code.linetable" : "code.lnotab";
  if (auto table_ptr = mem.read_u64(addr + off.require(table_field))) {
    if (auto table = objects_.read_bytes(*table_ptr)) info.line_table = std::move(*table);
  }
  info.valid = true;
  return info;
}

int Symbolizer::line_of(CodeInfo& code, std::int32_t instr) const {
  auto it = code.lines.find(instr);
  if (it != code.lines.end()) return it->second;
  int line = line_for_offset(format_, code.line_table, code.first_line, instr).value_or(code.first_line);
  if (code.lines.size() < 4096) code.lines.emplace(instr, line);
  return line;
}

stack::PyFrame Symbolizer::resolve(const pyebpf_py_frame& frame) {
  auto it = cache_.find(frame.code);
  // tag 0: BPF could not read the header, so there is nothing to compare.
  bool stale = it != cache_.end() && frame.tag != 0 && it->second.tag != frame.tag;
  if (it == cache_.end() || stale) {
    if (cache_.size() >= kMaxCached) cache_.clear();
    ++code_reads_;
    it = cache_.insert_or_assign(frame.code, read_code(frame.code)).first;
  }
  CodeInfo& code = it->second;
  if (!code.valid || (frame.tag != 0 && code.tag != frame.tag)) {
    // Unreadable, or freed and replaced between the sample and now.
    if (!code.valid) cache_.erase(it);
    return kUnresolved;
  }
  return {code.function, code.file, line_of(code, frame.instr), code.first_line};
}

}  // namespace pyebpf::python
