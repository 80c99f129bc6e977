// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>

#include "python.h"
#include "python/symbolizer.hpp"

namespace pyebpf::python {

// A Python stack as pyebpf prints it everywhere: "func (file:line);..." from
// the root (outermost call) to the leaf, the flame-graph order.
struct StackText {
  std::string text;
  int depth = 0;
  bool truncated = false;
  FrameInfo leaf;  // empty when depth == 0
};

// `bytes` is how much of `stack` arrived from BPF: frames beyond it are
// ignored even if the depth field claims more.
StackText format_stack(Symbolizer& symbolizer, const pyebpf_py_stack& stack, std::size_t bytes);

std::string format_frame(const FrameInfo& frame);

}  // namespace pyebpf::python
