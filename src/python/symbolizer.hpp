// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "python.h"
#include "python/line_table.hpp"
#include "python/objects.hpp"
#include "stack/frames.hpp"

namespace pyebpf::python {

// Names the frames BPF recorded: (code object address, instruction offset,
// tag) -> function, file and executing line. The frame's text stays valid
// until the next call (decoders copy it into their event at once).
class FrameResolver {
 public:
  virtual ~FrameResolver() = default;
  // kUnresolved where the code object cannot be read or does not hold what a
  // code object holds (freed, or corrupted by the target).
  virtual stack::PyFrame resolve(const pyebpf_py_frame& frame) = 0;
};

inline constexpr stack::PyFrame kUnresolved{"<unknown>", "<unknown>", 0};
inline bool unresolved(const stack::PyFrame& frame) {
  return frame.line == 0 && frame.function == kUnresolved.function && frame.file == kUnresolved.file;
}

// Turns (code object address, instruction offset, tag) recorded in BPF into
// function, file and executing line, reading the code object from the target.
// Cached per code address; the tag BPF computed from the code header is
// compared with the cached one, so an address reused by a new code object
// (exec, reloaded modules) is read again instead of naming the old function.
class Symbolizer : public FrameResolver {
 public:
  Symbolizer(const ObjectReader& objects, const pyebpf_py_layout& layout, LineTableFormat format);

  stack::PyFrame resolve(const pyebpf_py_frame& frame) override;
  std::size_t cached_code_objects() const { return cache_.size(); }
  std::uint64_t code_reads() const { return code_reads_; }

 private:
  struct CodeInfo {
    bool valid = false;
    std::uint32_t tag = 0;
    std::string function;
    std::string file;
    int first_line = 0;
    std::vector<std::uint8_t> line_table;
    std::unordered_map<std::int32_t, int> lines;  // instruction offset -> line
  };

  CodeInfo read_code(std::uint64_t addr) const;
  int line_of(CodeInfo& code, std::int32_t instr) const;

  static constexpr std::size_t kMaxCached = 100'000;

  const ObjectReader& objects_;
  pyebpf_py_layout layout_;
  LineTableFormat format_;
  std::unordered_map<std::uint64_t, CodeInfo> cache_;
  std::uint64_t code_reads_ = 0;
};

}  // namespace pyebpf::python
