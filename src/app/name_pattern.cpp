// SPDX-License-Identifier: Apache-2.0
#include "app/name_pattern.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "pyebpf/error.hpp"
#include "util/files.hpp"

namespace pyebpf::app {

void NamePattern::RegexFree::operator()(regex_t* re) const noexcept {
  regfree(re);
  delete re;
}

NamePattern::NamePattern(const std::string& pattern) : text_(pattern), regex_(new regex_t) {
  if (int err = regcomp(regex_.get(), pattern.c_str(), REG_EXTENDED | REG_NOSUB)) {
    char reason[256];
    regerror(err, regex_.get(), reason, sizeof(reason));
    delete regex_.release();  // regcomp failed: nothing to regfree
    throw Error("--name '" + pattern + "': " + reason,
                "PATTERN is an extended regular expression matched against the command line, as pgrep -f");
  }
}

bool NamePattern::matches(const std::string& command_line) const {
  return !command_line.empty() && regexec(regex_.get(), command_line.c_str(), 0, nullptr, 0) == 0;
}

// The longest run of plain characters outside groups and brackets, each of
// them required: a character a quantifier makes optional (?, *, {0,..}) ends
// its run without being part of it. An alternation anywhere: none.
std::string NamePattern::needle(std::size_t max) const {
  const std::string& p = text_;
  if (p.find('|') != std::string::npos) return {};
  std::string best, run;
  int depth = 0;
  auto end_run = [&] {
    if (depth == 0 && run.size() > best.size()) best = run;
    run.clear();
  };
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    switch (c) {
      case '*':
      case '?':
      case '{':
        if (!run.empty()) run.pop_back();  // the character before is optional
        end_run();
        if (c == '{') i = std::min(p.find('}', i), p.size());
        break;
      case '[':
        end_run();
        // A ']' right after '[' or '[^' is a member, not the end.
        i = p.find(']', i + (p.compare(i, 2, "[^") == 0 ? 3 : 2));
        if (i == std::string::npos) return best;
        break;
      case '(':
        end_run();
        ++depth;
        break;
      case ')':
        end_run();
        if (depth > 0) --depth;
        break;
      case '\\':
        end_run();
        ++i;
        break;
      case '.':
      case '^':
      case '$':
      case '+':  // the character before stays required, but may repeat
        end_run();
        break;
      default:
        // The next character may make this one optional: keep it in the run; the quantifier pops it.
        run += c;
    }
  }
  end_run();
  if (best.size() > max) best.resize(max);
  return best;
}

std::vector<pid_t> NamePattern::scan(const std::vector<pid_t>& exclude) const {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc"), closedir);
  if (!dir) return out;
  while (dirent* e = readdir(dir.get())) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    pid_t pid = static_cast<pid_t>(std::stol(e->d_name));
    if (std::find(exclude.begin(), exclude.end(), pid) != exclude.end()) continue;
    if (matches(read_command_line(pid))) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_command_line(pid_t pid) {
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/cmdline");
  if (!text) return {};
  while (!text->empty() && text->back() == '\0') text->pop_back();
  std::replace(text->begin(), text->end(), '\0', ' ');
  return *text;
}

std::vector<pid_t> self_and_ancestors() {
  std::vector<pid_t> out;
  for (pid_t pid = getpid(); pid > 1 && out.size() < 64;) {
    out.push_back(pid);
    // /proc/PID/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
    auto stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) break;
    auto close = stat->rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(stat->substr(close + 1));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    pid = ppid;
  }
  return out;
}

}  // namespace pyebpf::app
