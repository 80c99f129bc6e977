// SPDX-License-Identifier: Apache-2.0
// `pyebpf top`: a sink that tallies every record its trackers' descriptors
// know how to show (TrackerDescriptor::top), and redraws the view from the
// last interval and since start every refresh; keys change what it shows.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "live/display.hpp"
#include "live/tally.hpp"
#include "live/view_text.hpp"
#include "pyebpf/fd.hpp"
#include "sinks/sink.hpp"

namespace pyebpf::live {

class LiveView : public sinks::Sink {
 public:
  using Feed = std::function<void(const sinks::Record&, Tally&)>;
  using LostCount = std::function<std::uint64_t()>;

  // `feed`: what each record adds (the registry's top_feed); `lost`: events
  // lost so far; `title`: what is traced.
  LiveView(Feed feed, LostCount lost, std::string title, std::chrono::nanoseconds refresh,
           std::unique_ptr<Display> display);

  void write(const sinks::Record& record) override { feed_(record, tally_); }

  int timer_fd() const { return timer_.get(); }
  int key_fd() const { return display_->key_fd(); }
  // The refresh timer fired: close the interval and draw.
  void refresh();
  // Keys were typed: act on them and draw. False once `q` asks to quit.
  bool on_keys();
  // Applies one key to the view's state; false for `q`. (Public for tests.)
  bool apply_key(int key);
  const ViewState& state() const { return state_; }

 private:
  void draw();
  // The two spans as the screen shows them: now, or as they were when paused.
  const Window& last_shown() const { return state_.paused ? frozen_last_ : last_; }
  const Window& start_shown() const { return state_.paused ? frozen_start_ : tally_.since_start(); }
  // The span `i` chose, and the other one.
  const Window& chosen() const { return state_.since_start ? start_shown() : last_shown(); }
  const Window& other() const { return state_.since_start ? last_shown() : start_shown(); }

  Feed feed_;
  LostCount lost_;
  std::string title_;
  std::unique_ptr<Display> display_;
  Fd timer_;
  Tally tally_;
  Window last_;         // the last interval
  Window frozen_last_;  // paused: the spans shown
  Window frozen_start_;
  ViewState state_;
  std::chrono::steady_clock::time_point interval_start_;
};

}  // namespace pyebpf::live
