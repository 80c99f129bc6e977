// SPDX-License-Identifier: Apache-2.0
// The lines of one `pyebpf top` screen, from tallied windows: a header, the
// top functions, the threads, and the keys. Plain text that fits the given
// width and height, so the terminal view and the snapshots printed when
// stdout is no terminal are the same text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "live/tally.hpp"

namespace pyebpf::live {

// What the keys change.
struct ViewState {
  enum class Sort { Self, Total };
  Sort sort = Sort::Self;
  bool threads_by_name = false;      // else by CPU, then waits
  std::optional<std::uint32_t> tid;  // only this thread's functions and row
  bool since_start = false;          // else the last interval
  bool paused = false;               // the screen keeps its last picture
};

struct Screen {
  std::size_t width = 80, height = 24;
};

// `window`: the span `state` chooses (the last interval, or since start);
// `other`: the other one, summed up under the header and as one column of
// the functions. `title`: what is traced ("pid 4242 python3.11 · py_stack").
std::vector<std::string> render(const Window& window, const Window& other, const ViewState& state,
                                const std::string& title, Screen screen);

// The key help line's text, also printed once under text snapshots.
std::string keys_help();

// The next thread to filter on after `current` (none: the busiest), by CPU;
// nullopt after the last one (back to every thread).
std::optional<std::uint32_t> next_thread(const Window& window, std::optional<std::uint32_t> current);

}  // namespace pyebpf::live
