// SPDX-License-Identifier: Apache-2.0
// Where `pyebpf top` draws: a full-screen terminal view (ncurses) when stdin
// and stdout are terminals, else one plain-text snapshot per refresh on
// stdout (`pyebpf top ... | tee`, a log file).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "live/view_text.hpp"

namespace pyebpf::live {

class Display {
 public:
  virtual ~Display() = default;
  virtual Screen size() const = 0;
  virtual void show(const std::vector<std::string>& lines) = 0;
  // The fd that is readable when keys were typed; -1: none.
  virtual int key_fd() const = 0;
  // The keys typed since the last call (ncurses key codes).
  virtual std::vector<int> keys() = 0;
  // The latest warning or error logged while the view is up ("" if none).
  virtual std::string last_warning() const = 0;
};

// The terminal view if stdin and stdout are terminals, else text snapshots.
// The terminal view takes over the screen until it is destroyed, and holds
// pyebpf's log lines meanwhile (printed on stderr when it closes).
std::unique_ptr<Display> make_display();

}  // namespace pyebpf::live
