// SPDX-License-Identifier: Apache-2.0
#include "pyebpf/error.hpp"

#include <cstring>

namespace pyebpf {

std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

}  // namespace pyebpf
