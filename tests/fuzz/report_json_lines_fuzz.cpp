// SPDX-License-Identifier: Apache-2.0
// `pyebpf report FILE` on arbitrary bytes: JSON lines as pyebpf prints them,
// anything else, or (starting with SQLite's magic) a raw database file. A
// bad file may be refused with pyebpf::Error; nothing else may escape.
#include <sys/mman.h>
#include <unistd.h>

#include <fcntl.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/report_command.hpp"
#include "pyebpf/error.hpp"

namespace {

// The report is printed on stdout: silence it, once.
int memory_file() {
  int null = ::open("/dev/null", O_WRONLY);
  if (null < 0 || ::dup2(null, STDOUT_FILENO) < 0) std::abort();
  ::close(null);
  int fd = memfd_create("report-fuzz", 0);
  if (fd < 0) std::abort();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = memory_file();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  pyebpf::app::Options options;
  options.command = pyebpf::app::Options::Command::Report;
  options.report_file = "/proc/self/fd/" + std::to_string(fd);
  try {
    pyebpf::app::print_stored_report(options);
  } catch (const pyebpf::Error&) {
  }
  std::fflush(stdout);
  return 0;
}
