// SPDX-License-Identifier: Apache-2.0
// Reading the stacks in events: Python stacks are "frame;frame;..." root
// first; kernel/native stacks are JSON arrays of frame names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sinks/sink.hpp"

namespace pyebpf::sinks {

std::vector<std::string> split_frames(const std::string& stack);
std::string leaf_frame(const std::string& stack);

// A Python frame "func (file:line)" taken apart; nullopt if it is not one.
struct PyFrame {
  std::string function, file;
  long line = 0;
};
std::optional<PyFrame> parse_py_frame(const std::string& frame);
// "func (file:line)" -> "func (file)": the function, whatever line.
std::string function_of(const std::string& frame);
// For narrow displays: "func (/srv/app/views.py:12)" -> "func (views.py:12)",
// frame by frame for a whole stack.
std::string short_frame(const std::string& frame);
std::string short_stack(const std::string& stack);

// The kernel stack of an event (field `key`), root first, "+0x.." offsets
// removed. Accepts either order from the tracker: a stack whose first frame
// is the scheduler (schedule, __schedule, finish_task_switch...) is leaf first.
std::vector<std::string> kernel_frames_root_first(const Event& event, const char* key = "kernel_stack");
// What a thread slept in: its system call (futex, ppoll, read, ...) if the
// kernel stack shows one, else the first frame below the scheduler; "-" if none.
std::string kernel_wait(const Event& event);

}  // namespace pyebpf::sinks
