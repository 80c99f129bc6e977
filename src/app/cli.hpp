// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "app/options.hpp"

namespace pyebpf::app {

// Parses argv. Returns nullopt when the process should exit with `exit_code`
// already set (--help, --version, or a usage error already printed as one line).
std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code);

}  // namespace pyebpf::app
