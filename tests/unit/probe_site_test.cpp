// SPDX-License-Identifier: Apache-2.0
#include "native/probe_site.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "native/libc.hpp"

namespace pyebpf::native {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Instructions as glibc 2.36's wrappers encode them.
const Bytes kCmpbRip = {0x80, 0x3d, 0x31, 0x33, 0x0e, 0x00, 0x00};  // cmpb $0x0,0xe3331(%rip)
const Bytes kJe = {0x74, 0x17};                                     // je +0x17
const Bytes kMovR10dEcx = {0x41, 0x89, 0xca};                       // mov %ecx,%r10d
const Bytes kMovR10Rcx = {0x49, 0x89, 0xca};                        // mov %rcx,%r10
const Bytes kMovEaxImm = {0xb8, 0xe9, 0x00, 0x00, 0x00};            // mov $0xe9,%eax
const Bytes kSyscall = {0x0f, 0x05};
const Bytes kCmpRax = {0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff};  // cmp $-0xfff,%rax
const Bytes kJae = {0x73, 0x01};
const Bytes kRet = {0xc3};

ProbeSite site(const Bytes& code, int args_read = 1, bool may_follow_syscall = false) {
  return find_probe_site(code, {.args_read = args_read, .may_follow_syscall = may_follow_syscall});
}

TEST(ProbeSiteTest, SkipsTheSingleSteppedCompareToTheBranch) {
  auto s = site(kCmpbRip + kJe + kRet);  // read, close
  EXPECT_EQ(s.offset, 7u);
  EXPECT_TRUE(s.emulated);
  EXPECT_FALSE(s.after_syscall);
  EXPECT_EQ(s.instruction.rfind("je ", 0), 0u) << s.instruction;
}

TEST(ProbeSiteTest, PassesWritesOfRegistersTheProgramDoesNotRead) {
  // recv: the 4th argument moves to r10 for the system call; rdi..rcx stay.
  EXPECT_EQ(site(kCmpbRip + kMovR10dEcx + kJe, 4).offset, 10u);
  // xor %edi,%edi clobbers the first argument: only a program that does not read it may follow.
  const Bytes xor_edi = {0x31, 0xff};
  EXPECT_EQ(site(xor_edi + kJe, 0).offset, 2u);
  auto s = site(xor_edi + kJe, 1);
  EXPECT_EQ(s.offset, 0u);
  EXPECT_FALSE(s.emulated);
  EXPECT_EQ(s.instruction, "xor edi, edi");
  // ... and through a sub-register: mov %al,%sil writes rsi.
  const Bytes mov_sil = {0x40, 0x88, 0xc6};
  EXPECT_EQ(site(mov_sil + kJe, 1).offset, 3u);
  EXPECT_EQ(site(mov_sil + kJe, 2).offset, 0u);
}

TEST(ProbeSiteTest, FollowsTheSystemCallOnlyWhereAllowed) {
  const Bytes epoll_ctl = kMovR10Rcx + kMovEaxImm + kSyscall + kCmpRax + kJae + kRet;
  auto after = site(epoll_ctl, 3, true);
  EXPECT_EQ(after.offset, 16u);
  EXPECT_TRUE(after.after_syscall);
  EXPECT_TRUE(after.emulated);
  auto before = site(epoll_ctl, 3, false);
  EXPECT_EQ(before.offset, 0u);
  EXPECT_FALSE(before.emulated);
  EXPECT_FALSE(before.after_syscall);
  // The system call clobbers rcx (the 4th argument) and r11.
  EXPECT_EQ(site(epoll_ctl, 4, true).offset, 0u);
  // After it, rax is the result: an instruction writing rax ends the search.
  const Bytes neg_eax = {0xf7, 0xd8};
  EXPECT_FALSE(site(kMovEaxImm + kSyscall + neg_eax + kJae, 1, true).emulated);
  // One system call at most.
  EXPECT_FALSE(site(kSyscall + kSyscall + kJae, 1, true).emulated);
}

TEST(ProbeSiteTest, NothingThatMovesTheStackOrMemoryOrLeavesComesFirst) {
  const Bytes sub_rsp = {0x48, 0x83, 0xec, 0x28};      // sub $0x28,%rsp
  const Bytes store = {0x48, 0x89, 0x54, 0x24, 0x18};  // mov %rdx,0x18(%rsp)
  const Bytes jmp_rax = {0xff, 0xe0};                  // jmp *%rax
  const Bytes pop_rbx = {0x5b};                        // pop %rbx (writes rsp)
  for (const auto& first : {sub_rsp, store, jmp_rax, kRet, pop_rbx}) {
    auto s = site(first + kJe, 0);
    EXPECT_EQ(s.offset, 0u) << s.instruction;
    EXPECT_FALSE(s.emulated) << s.instruction;
  }
}

TEST(ProbeSiteTest, TakesEveryInstructionKindTheKernelEmulates) {
  const std::vector<std::pair<Bytes, std::string>> emulated = {
      {{0x53}, "push rbx"},                          // recvmsg starts so
      {{0x41, 0x57}, "push r15"},                    // REX 0x41
      {{0x74, 0x00}, "je"},                          // jcc rel8
      {{0x0f, 0x84, 0x00, 0x00, 0x00, 0x00}, "je"},  // jcc rel32
      {{0xeb, 0x00}, "jmp"},                         // jmp rel8
      {{0xe9, 0x00, 0x00, 0x00, 0x00}, "jmp"},       // jmp rel32
      {{0xe8, 0x00, 0x00, 0x00, 0x00}, "call"},      // call rel32
      {{0x90}, "nop"},                               // nop
      {{0x0f, 0x1f, 0x40, 0x00}, "nop"},             // nopl 0x0(%rax)
  };
  for (const auto& [code, mnemonic] : emulated) {
    auto s = site(kCmpbRip + code);
    EXPECT_EQ(s.offset, kCmpbRip.size()) << mnemonic;
    EXPECT_TRUE(s.emulated) << mnemonic;
    EXPECT_EQ(s.instruction.rfind(mnemonic, 0), 0u) << s.instruction;
  }
  // Not emulated: a push with REX.W, a 0x66-prefixed nop, a hint nop (0f 1f /1), a plain mov.
  const Bytes push_rex_w = {0x48, 0x53}, nopw = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, hint = {0x0f, 0x1f, 0x48, 0x00},
              mov = {0x89, 0xc0};
  for (const auto& code : {push_rex_w, nopw, hint, mov}) {
    auto s = site(code + kRet);
    EXPECT_FALSE(s.emulated) << s.instruction;
  }
  // A prefixed nop is passed over (it writes nothing).
  EXPECT_EQ(site(nopw + kJe).offset, nopw.size());
}

TEST(ProbeSiteTest, NothingAfterTheSiteMayJumpBackToItOrBeforeIt) {
  // cmpb (0..6), je (7..8), ret (9), then a jmp rel8 at 10 (next at 12) to 12 + rel.
  const Bytes head = kCmpbRip + kJe + kRet;
  EXPECT_EQ(site(head + Bytes{0xeb, 0xfb}).offset, 0u);  // to 7, the site: it would fire mid-function
  EXPECT_EQ(site(head + Bytes{0xeb, 0xf9}).offset, 0u);  // to 5, inside the prefix
  EXPECT_EQ(site(head + Bytes{0xeb, 0xf4}).offset, 7u);  // to 0: a new entry, as at offset 0
  EXPECT_EQ(site(head + Bytes{0xeb, 0xfd}).offset, 7u);  // to 9, past the site
  // The rest of the function must decode, or it cannot be checked.
  EXPECT_EQ(site(head + Bytes{0xff, 0xff, 0xff, 0xff}).offset, 0u);
}

TEST(ProbeSiteTest, FallsBackToTheStartWhenNothingQualifies) {
  EXPECT_EQ(site({}).offset, 0u);
  EXPECT_FALSE(site({}).emulated);
  EXPECT_FALSE(site({0xff, 0xff, 0xff, 0xff}).emulated);  // not an instruction
  EXPECT_FALSE(site(kCmpbRip).emulated);                  // the bytes end first
  Bytes long_prefix;
  for (int i = 0; i < 20; ++i) long_prefix = long_prefix + Bytes{0x89, 0xc0};  // mov %eax,%eax
  EXPECT_FALSE(site(long_prefix + kJe, 0).emulated);                           // too far in
}

// This machine's C library, as the trackers probe it: every hooked function
// has an emulated site, only epoll_ctl's follows its system call; on glibc
// 2.36 (Debian 12) the sites are where its disassembly puts them.
TEST(ProbeSiteTest, PlacesTheTrackersProbesInThisMachinesLibc) {
  struct Case {
    const char* name;
    ProbeNeeds needs;
    std::uint64_t glibc_2_36_offset;
  };
  const std::vector<Case> cases = {
      {"read", {1, false}, 7},      {"readv", {1, false}, 7},     {"close", {1, false}, 7},
      {"recv", {1, false}, 10},     {"recvfrom", {1, false}, 10}, {"recvmsg", {1, false}, 0},
      {"accept4", {1, false}, 10},  {"accept", {1, false}, 7},    {"accept4", {0, false}, 10},
      {"epoll_ctl", {3, true}, 16},
  };
  std::vector<std::string> names;
  for (const auto& c : cases) names.emplace_back(c.name);
  std::vector<std::string> unreadable;
  const auto functions = libc_functions(getpid(), names, unreadable);
  // Under ASan this executable defines read, close ... too (its
  // interceptors, which are no C library): only the C library's count.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const bool glibc_2_36 = std::strcmp(gnu_get_libc_version(), "2.36") == 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    int found = 0;
    for (const auto& f : functions) {
      if (f.name != c.name || f.mapped_path == self) continue;
      ++found;
      auto s = find_probe_site(f.code, c.needs);
      EXPECT_TRUE(s.emulated) << s.instruction;
      EXPECT_EQ(s.after_syscall, std::string(c.name) == "epoll_ctl") << s.instruction;
      if (glibc_2_36) {
        EXPECT_EQ(s.offset, c.glibc_2_36_offset) << s.instruction;
      }
    }
    EXPECT_GE(found, 1);
  }
}

// The bytes decoded are the ones this process executes.
TEST(ProbeSiteTest, LibcFunctionsCarryTheCodeTheProcessRuns) {
  for (const char* name : {"read", "epoll_ctl"}) {
    SCOPED_TRACE(name);
    const auto* address = reinterpret_cast<const std::uint8_t*>(dlsym(RTLD_DEFAULT, name));
    ASSERT_NE(address, nullptr);
    bool compared = false;
    std::vector<std::string> unreadable;
    for (const auto& f : libc_functions(getpid(), {name}, unreadable)) {
      ASSERT_FALSE(f.code.empty());
      ASSERT_LE(f.code.size(), kMaxCodeBytes);
      if (std::memcmp(f.code.data(), address, f.code.size()) == 0) compared = true;
    }
    EXPECT_TRUE(compared);
  }
}

}  // namespace
}  // namespace pyebpf::native
