"""A target that maps crafted ELF files named like libpython, the way a
hostile or broken process could: pyebpf parses every mapped libpython*
candidate, so each must be skipped or refused, never crash or hang it.

Variants, each made from the first bytes of a real ELF (the interpreter):
  truncated      the ELF header and a few bytes after it
  huge-sections  e_shnum 65535 with e_shoff near the end of the file
  overlapping    program headers whose PT_LOADs overlap each other and the
                 headers themselves, with sizes past the end of the file
  unterminated   every byte of every SHT_STRTAB / SHT_DYNSYM name table 'A':
                 symbol and section names without a terminating NUL
argv: seconds of CPU work in spin_in_known_function after GO.
"""
import mmap
import os
import struct
import sys
import tempfile
import time

from wl_common import ready, result, wait_go, linger


def real_elf_bytes(path):
    with open(os.path.realpath(path), "rb") as f:
        return bytearray(f.read())


def truncated(elf):
    return elf[:80]


def huge_sections(elf):
    out = bytearray(elf[:64 * 1024])
    # e_shoff, e_flags, e_ehsize, e_phentsize, e_phnum (kept), e_shentsize, e_shnum, e_shstrndx
    struct.pack_into("<QIHHHHHH", out, 0x28, len(out) - 64, 0, 64, 56, struct.unpack_from("<H", elf, 0x38)[0], 64, 65535,
                     65534)
    return out


def overlapping(elf):
    out = bytearray(elf[:64 * 1024])
    phoff = struct.unpack_from("<Q", out, 0x20)[0]
    phnum = struct.unpack_from("<H", out, 0x38)[0]
    for i in range(phnum):
        # p_type PT_LOAD, flags R, offset 0, vaddr 0x1000*i, filesz/memsz far past the file.
        struct.pack_into("<IIQQQQQQ", out, phoff + 56 * i, 1, 4, 0, 0x1000 * i, 0x1000 * i, 1 << 40, 1 << 40, 0x1000)
    return out


def unterminated(elf):
    out = bytearray(elf)
    shoff, = struct.unpack_from("<Q", out, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", out, 0x3A)
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + 64 > len(out):
            break
        sh_type, = struct.unpack_from("<I", out, at + 4)
        offset, size = struct.unpack_from("<QQ", out, at + 24)
        if sh_type == 3 and offset + size <= len(out):  # SHT_STRTAB
            out[offset:offset + size] = b"A" * size
    return out


VARIANTS = (("truncated", truncated), ("huge-sections", huge_sections), ("overlapping", overlapping),
            ("unterminated", unterminated))


def spin_in_known_function(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += sum(i * i for i in range(1000))
    return n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    elf = real_elf_bytes(sys.executable)
    tmp = tempfile.mkdtemp(prefix="pyebpf-hostile-")
    maps = []
    for name, make in VARIANTS:
        path = os.path.join(tmp, "libpython3-%s.so" % name)
        with open(path, "wb") as f:
            f.write(make(elf))
        with open(path, "rb") as f:
            maps.append(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
    ready(crafted=sorted(os.listdir(tmp)))
    wait_go()
    t0 = time.process_time()
    spin_in_known_function(seconds)
    result(cpu_seconds=time.process_time() - t0)
    linger()
    for path in os.listdir(tmp):
        os.unlink(os.path.join(tmp, path))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
