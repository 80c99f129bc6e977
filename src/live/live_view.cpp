// SPDX-License-Identifier: Apache-2.0
#include "live/live_view.hpp"

#include "util/timer.hpp"

namespace pyebpf::live {

LiveView::LiveView(Feed feed, LostCount lost, std::string title, std::chrono::nanoseconds refresh,
                   std::unique_ptr<Display> display)
    : feed_(std::move(feed)),
      lost_(std::move(lost)),
      title_(std::move(title)),
      display_(std::move(display)),
      timer_(make_timer(refresh, refresh)),
      interval_start_(std::chrono::steady_clock::now()) {
  // A terminal shows the (empty) view at once; snapshots start with data.
  if (display_->key_fd() >= 0) draw();
}

void LiveView::refresh() {
  if (!expired(timer_)) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - interval_start_).count();
  interval_start_ = now;
  last_ = tally_.roll(seconds, lost_());
  if (!state_.paused) draw();
}

bool LiveView::apply_key(int key) {
  switch (key) {
    case 'q':
    case 'Q':
      return false;
    case 's':
      state_.sort = ViewState::Sort::Self;
      break;
    case 't':
      state_.sort = ViewState::Sort::Total;
      break;
    case 'n':
      state_.threads_by_name = !state_.threads_by_name;
      break;
    case 'f':
      state_.tid = next_thread(chosen(), state_.tid);
      break;
    case 'a':
      state_.tid.reset();
      break;
    case 'i':
      state_.since_start = !state_.since_start;
      break;
    case 'p':
    case ' ':
      state_.paused = !state_.paused;
      if (state_.paused) {
        frozen_last_ = last_;
        frozen_start_ = tally_.since_start();
      }
      break;
    default:
      break;
  }
  return true;
}

bool LiveView::on_keys() {
  bool go_on = true;
  for (int key : display_->keys()) go_on = apply_key(key) && go_on;
  if (go_on) draw();
  return go_on;
}

void LiveView::draw() {
  auto lines = render(chosen(), other(), state_, title_, display_->size());
  const std::string warning = display_->last_warning();
  if (!warning.empty() && lines.size() >= 2) lines[lines.size() - 2] = warning;
  display_->show(lines);
}

}  // namespace pyebpf::live
