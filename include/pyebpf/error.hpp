// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <stdexcept>
#include <string>

namespace pyebpf {

// A failure the user can act on. what() is one line naming the cause; hint(),
// when not empty, is one line naming the fix. Thrown where the failure is
// found, caught once in main (or by the runner for per-target failures).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, std::string hint = {}) : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

// "<what>: <strerror(err)>", for errors that come from a system call.
std::string errno_text(const std::string& what, int err);

}  // namespace pyebpf
