// SPDX-License-Identifier: Apache-2.0
// find_probe_site on arbitrary machine code: it decodes (capstone) the C
// library functions of each target, from files in the target's root, which a
// container controls. Input: a byte of needs (args_read in bits 0-2,
// may_follow_syscall in bit 3), then the function's code. Besides the
// sanitizers, the result must be a site inside the code the needs allow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "native/libc.hpp"
#include "native/probe_site.hpp"

using namespace pyebpf::native;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 1 + kMaxCodeBytes) return -1;  // libc_functions never hands more over
  const ProbeNeeds needs{.args_read = (data[0] & 7) % 7, .may_follow_syscall = (data[0] & 8) != 0};
  const std::span<const std::uint8_t> code(data + 1, size - 1);
  const ProbeSite site = find_probe_site(code, needs);
  if (site.offset != 0 && (!site.emulated || site.offset >= code.size())) std::abort();
  if (site.after_syscall && (!needs.may_follow_syscall || site.offset == 0)) std::abort();
  return 0;
}
