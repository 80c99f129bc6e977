// SPDX-License-Identifier: Apache-2.0
#include "native/probe_site.hpp"

#include <capstone/capstone.h>

#include <memory>

namespace pyebpf::native {
namespace {

// At most this many instructions are looked at: glibc's wrappers reach their
// site within 5 (epoll_ctl), and a long straight prefix means it is no wrapper.
constexpr int kMaxInstructions = 16;

// The 64-bit general purpose register `reg` is part of (eax -> rax), as a bit
// of a mask in the hardware's numbering (rax = 0 ... r15 = 15), 0 for others
// (flags, rip, segment and vector registers).
std::uint32_t gpr_bit(unsigned reg) {
  static const unsigned families[16][5] = {
      {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
      {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
      {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
      {X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
      {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, X86_REG_SPL},
      {X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, X86_REG_BPL},
      {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_SIL},
      {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_DIL},
      {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_R8B},
      {X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, X86_REG_R9B},
      {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, X86_REG_R10B},
      {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, X86_REG_R11B},
      {X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, X86_REG_R12B},
      {X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, X86_REG_R13B},
      {X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, X86_REG_R14B},
      {X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, X86_REG_R15B},
  };
  for (unsigned i = 0; i < 16; ++i) {
    for (unsigned r : families[i]) {
      if (r == reg) return 1u << i;
    }
  }
  return 0;
}

constexpr std::uint32_t kRax = 1u << 0, kRcx = 1u << 1, kRsp = 1u << 4, kR11 = 1u << 11;

// Registers of the System V integer arguments 1..n.
std::uint32_t argument_registers(int n) {
  static const unsigned order[] = {X86_REG_RDI, X86_REG_RSI, X86_REG_RDX, X86_REG_RCX, X86_REG_R8, X86_REG_R9};
  std::uint32_t mask = 0;
  for (int i = 0; i < n && i < 6; ++i) mask |= gpr_bit(order[i]);
  return mask;
}

// Whether the kernel emulates `insn` when a uprobe hits it, instead of
// copying it out of line and single-stepping it (arch/x86/kernel/uprobes.c,
// arch_uprobe_analyze_insn: branch_setup_xol_ops takes jmp rel8/rel32, call
// rel32, jcc rel8/rel32 and nop; push_setup_xol_ops takes push of a register,
// plain or with REX 0x41). Multi-byte nops (0f 1f) are emulated where
// branch_setup_xol_ops starts with insn_is_nop() (recent kernels); an older
// kernel single-steps them, which costs what offset 0 would, no more. Any
// other prefix (0x66 is refused on branches; segment, lock, rep) disqualifies:
// no gain worth the doubt.
bool kernel_emulates(const cs_insn& insn) {
  const cs_x86& x = insn.detail->x86;
  if (x.prefix[0] || x.prefix[1] || x.prefix[2] || x.prefix[3]) return false;
  const std::uint8_t op = x.opcode[0];
  if (op >= 0x50 && op <= 0x57) return x.rex == 0 || x.rex == 0x41;  // push reg
  if (x.rex) return false;
  if (op == 0xeb || op == 0xe9 || op == 0xe8 || op == 0x90) return true;      // jmp, call, nop
  if (op >= 0x70 && op <= 0x7f) return true;                                  // jcc rel8
  if (op == 0x0f && x.opcode[1] >= 0x80 && x.opcode[1] <= 0x8f) return true;  // jcc rel32
  return op == 0x0f && x.opcode[1] == 0x1f && ((x.modrm >> 3) & 7) == 0;      // nopl: 0f 1f /0 only
}

bool writes_memory(const cs_insn& insn) {
  const cs_x86& x = insn.detail->x86;
  for (int i = 0; i < x.op_count; ++i) {
    if (x.operands[i].type == X86_OP_MEM && (x.operands[i].access & CS_AC_WRITE)) return true;
  }
  return false;
}

bool changes_control_flow(csh handle, const cs_insn& insn) {
  for (auto group : {CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT, CS_GRP_IRET, CS_GRP_BRANCH_RELATIVE}) {
    if (cs_insn_group(handle, &insn, group)) return true;
  }
  return false;
}

std::uint32_t registers_written(csh handle, const cs_insn& insn) {
  cs_regs read, written;
  std::uint8_t read_count = 0, write_count = 0;
  if (cs_regs_access(handle, &insn, read, &read_count, written, &write_count) != CS_ERR_OK) return ~0u;
  std::uint32_t mask = 0;
  for (std::uint8_t i = 0; i < write_count; ++i) mask |= gpr_bit(written[i]);
  return mask;
}

struct Disassembler {
  csh handle = 0;
  bool open = false;
  Disassembler() {
    open = cs_open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK &&
           cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
  }
  ~Disassembler() {
    if (handle) cs_close(&handle);
  }
  Disassembler(const Disassembler&) = delete;
  Disassembler& operator=(const Disassembler&) = delete;
};

std::string text(const cs_insn& insn) {
  return std::string(insn.mnemonic) + (insn.op_str[0] ? " " : "") + insn.op_str;
}

// Whether every instruction of `code` (the whole function) decodes and none
// branches to an offset in (0, site]: the probe must fire once per call, at entry, and
// only there is [rsp] the return address a uretprobe replaces. Direct
// branches only: a wrapper that jumps indirectly is no wrapper (then none of
// it decodes as straight code anyway).
bool nothing_reenters(csh handle, cs_insn* insn, std::span<const std::uint8_t> code, std::uint64_t site) {
  const std::uint8_t* bytes = code.data();
  std::size_t size = code.size();
  std::uint64_t address = 0;
  while (size > 0) {
    if (!cs_disasm_iter(handle, &bytes, &size, &address, insn)) return false;
    if (!cs_insn_group(handle, insn, CS_GRP_JUMP) && !cs_insn_group(handle, insn, CS_GRP_CALL)) continue;
    const cs_x86& x = insn->detail->x86;
    for (int i = 0; i < x.op_count; ++i) {
      if (x.operands[i].type != X86_OP_IMM) continue;
      const auto target = static_cast<std::uint64_t>(x.operands[i].imm);
      if (target > 0 && target <= site) return false;
    }
  }
  return true;
}

}  // namespace

ProbeSite find_probe_site(std::span<const std::uint8_t> code, const ProbeNeeds& needs) {
  ProbeSite fallback;
  Disassembler d;
  if (!d.open) return fallback;
  std::unique_ptr<cs_insn, void (*)(cs_insn*)> insn(cs_malloc(d.handle), [](cs_insn* i) { cs_free(i, 1); });
  if (!insn) return fallback;

  const std::uint8_t* bytes = code.data();
  std::size_t size = code.size();
  std::uint64_t address = 0;
  std::uint32_t kept =
      argument_registers(needs.args_read) | kRsp;  // registers no instruction may write before the site
  bool after_syscall = false;
  for (int n = 0; n < kMaxInstructions && cs_disasm_iter(d.handle, &bytes, &size, &address, insn.get()); ++n) {
    if (n == 0) fallback.instruction = text(*insn);
    if (kernel_emulates(*insn)) {
      ProbeSite site{insn->address, after_syscall, true, text(*insn)};
      if (site.offset == 0 || nothing_reenters(d.handle, insn.get(), code, site.offset)) return site;
      break;
    }
    if (insn->id == X86_INS_SYSCALL) {
      // The kernel returns with the result in rax and the return address and
      // flags in rcx and r11 (capstone 4 lists none of them as written).
      if (!needs.may_follow_syscall || after_syscall || (kept & (kRcx | kR11))) break;
      after_syscall = true;
      kept |= kRax;
      continue;
    }
    if (changes_control_flow(d.handle, *insn) || writes_memory(*insn) || (registers_written(d.handle, *insn) & kept))
      break;
  }
  return fallback;
}

}  // namespace pyebpf::native
