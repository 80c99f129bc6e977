// SPDX-License-Identifier: Apache-2.0
#include "util/files.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace pyebpf {

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return out.str();
}

std::string read_comm(pid_t pid, pid_t tid) {
  auto text = read_text_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  if (!text) return {};
  while (!text->empty() && text->back() == '\n') text->pop_back();
  return *text;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool process_exists(pid_t pid) { return path_exists("/proc/" + std::to_string(pid)); }

}  // namespace pyebpf
