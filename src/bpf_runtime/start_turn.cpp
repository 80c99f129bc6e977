// SPDX-License-Identifier: Apache-2.0
#include "bpf_runtime/start_turn.hpp"

#include <mutex>

namespace pyebpf::bpf {
namespace {

std::mutex turn;
thread_local bool holding = false;

}  // namespace

StartTurn::StartTurn() {
  turn.lock();
  holding = true;
}

StartTurn::~StartTurn() {
  holding = false;
  turn.unlock();
}

LoadWindow::LoadWindow() : released_(holding) {
  if (!released_) return;
  holding = false;
  turn.unlock();
}

LoadWindow::~LoadWindow() {
  if (!released_) return;
  turn.lock();
  holding = true;
}

}  // namespace pyebpf::bpf
