// SPDX-License-Identifier: Apache-2.0
#include "python/stack_format.hpp"

#include <algorithm>
#include <vector>

namespace pyebpf::python {

std::string format_frame(const FrameInfo& frame) {
  return frame.function + " (" + frame.file + ":" + std::to_string(frame.line) + ")";
}

StackText format_stack(Symbolizer& symbolizer, const pyebpf_py_stack& stack, std::size_t bytes) {
  StackText out;
  std::size_t available =
      bytes >= PYEBPF_STACK_BYTES(0) ? (bytes - PYEBPF_STACK_BYTES(0)) / sizeof(pyebpf_py_frame) : 0;
  std::size_t depth = std::min<std::size_t>({stack.depth, available, PYEBPF_MAX_FRAMES});
  out.depth = static_cast<int>(depth);
  out.truncated = stack.truncated != 0;
  std::vector<FrameInfo> frames;
  frames.reserve(depth);
  for (std::size_t i = 0; i < depth; ++i) frames.push_back(symbolizer.resolve(stack.frames[i]));
  for (std::size_t i = depth; i-- > 0;) {
    if (!out.text.empty()) out.text += ';';
    out.text += format_frame(frames[i]);
  }
  if (depth) out.leaf = frames.front();
  return out;
}

}  // namespace pyebpf::python
