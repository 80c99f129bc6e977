// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <regex.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace pyebpf::app {

// -n/--name PATTERN: a POSIX extended regular expression matched against a
// process's whole command line, its arguments joined by spaces, the way
// `pgrep -f` does.
class NamePattern {
 public:
  // Throws pyebpf::Error naming the pattern and regcomp's reason.
  explicit NamePattern(const std::string& pattern);

  const std::string& text() const { return text_; }
  bool matches(const std::string& command_line) const;
  // A literal every match contains (at most `max` bytes), for the BPF
  // prefilter of exec'd command lines; "" when none can be told (e.g. an
  // alternation), and then every exec is checked in user space.
  std::string needle(std::size_t max) const;

  // The processes whose command line matches now, but `exclude`d ones.
  std::vector<pid_t> scan(const std::vector<pid_t>& exclude) const;

 private:
  struct RegexFree {
    void operator()(regex_t* re) const noexcept;
  };
  std::string text_;
  std::unique_ptr<regex_t, RegexFree> regex_;
};

// /proc/PID/cmdline with its NULs as spaces ("" for a kernel thread or a
// process that is gone).
std::string read_command_line(pid_t pid);

// pyebpf and the processes that started it (sudo, the shell): their command
// lines hold the pattern too, and are never targets.
std::vector<pid_t> self_and_ancestors();

}  // namespace pyebpf::app
