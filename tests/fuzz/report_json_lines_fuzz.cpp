// SPDX-License-Identifier: Apache-2.0
// `pyebpf report FILE`'s readers on arbitrary bytes: JSON lines as pyebpf
// prints them (each object read back by record_from_json), anything else, or
// (starting with SQLite's magic) a raw database file for SqliteStore's
// reader. A bad file may be refused with pyebpf::Error; nothing else may
// escape, and whatever is read must render.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pyebpf/error.hpp"
#include "stored_report.hpp"

namespace {

std::string sqlite_report_of(const std::uint8_t* data, std::size_t size) {
  static const int fd = [] {
    int f = memfd_create("report-fuzz", 0);
    if (f < 0) std::abort();
    return f;
  }();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  try {
    return pyebpf::fuzz::sqlite_report("/proc/self/fd/" + std::to_string(fd));
  } catch (const pyebpf::Error&) {
    return {};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kSqliteMagic("SQLite format 3\0", 16);
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.starts_with(kSqliteMagic)) {
    (void)sqlite_report_of(data, size);
    return 0;
  }
  pyebpf::app::StoredEvents stored;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    auto e = nlohmann::ordered_json::parse(text.substr(0, end), nullptr, false);
    if (!e.is_discarded() && e.is_object()) stored.add(e);
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  (void)stored.report.render();
  return 0;
}
