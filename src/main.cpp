// SPDX-License-Identifier: Apache-2.0
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

#include "app/cli.hpp"
#include "app/dump_command.hpp"
#include "app/report_command.hpp"
#include "app/runner.hpp"
#include "pyebpf/error.hpp"

namespace {

void setup_logging(int verbosity) {
  auto logger = spdlog::stderr_color_st("pyebpf");
  logger->set_pattern("pyebpf: %^%l%$: %v");
  logger->set_level(verbosity >= 2   ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  auto options = pyebpf::app::parse_command_line(argc, argv, exit_code);
  if (!options) return exit_code;
  setup_logging(options->verbosity);
  try {
    if (options->command == pyebpf::app::Options::Command::Report) return pyebpf::app::print_stored_report(*options);
    if (options->command == pyebpf::app::Options::Command::Dump) return pyebpf::app::print_thread_dump(*options);
    return pyebpf::app::run(*options);
  } catch (const pyebpf::Error& e) {
    if (e.hint().empty())
      std::fprintf(stderr, "pyebpf: error: %s\n", e.what());
    else
      std::fprintf(stderr, "pyebpf: error: %s (hint: %s)\n", e.what(), e.hint().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pyebpf: internal error: %s\n", e.what());
    return 70;
  }
}
