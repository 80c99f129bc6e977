// SPDX-License-Identifier: Apache-2.0
#include "util/files.hpp"

#include <sys/stat.h>

#include <filesystem>
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

std::uint32_t container_pid_of(pid_t pid) {
  auto status = read_text_file("/proc/" + std::to_string(pid) + "/status");
  if (!status) return static_cast<std::uint32_t>(pid);
  auto pos = status->find("\nNSpid:");
  if (pos == std::string::npos) return static_cast<std::uint32_t>(pid);
  auto end = status->find('\n', pos + 1);
  std::string line = status->substr(pos + 7, end == std::string::npos ? std::string::npos : end - pos - 7);
  auto last = line.find_last_not_of(" \t");
  if (last == std::string::npos) return static_cast<std::uint32_t>(pid);
  auto first = line.find_last_of(" \t", last);
  return static_cast<std::uint32_t>(std::stoul(line.substr(first == std::string::npos ? 0 : first + 1)));
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool process_exists(pid_t pid) {
  return path_exists("/proc/" + std::to_string(pid));
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  // The process may exit meanwhile: every step takes an error code, none throws.
  for (std::filesystem::directory_iterator it(tasks, ec), end; !ec && it != end; it.increment(ec)) {
    auto text = read_text_file(it->path().string() + "/children");
    if (!text) continue;
    std::istringstream in(*text);
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

}  // namespace pyebpf
