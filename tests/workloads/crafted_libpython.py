"""Writes hostile_elves.py's crafted variants of a real libpython, each as
OUT/<variant>/<the libpython's own file name>, for a target that maps one of
them as its only libpython (tests/e2e/elf_host.c).
argv: the real libpython, OUT. Prints one JSON line: {variant: path}.
"""
import json
import os
import sys

from hostile_elves import VARIANTS, real_elf_bytes


def main():
    source, out = sys.argv[1], sys.argv[2]
    elf = real_elf_bytes(source)
    written = {}
    for name, make in VARIANTS:
        os.makedirs(os.path.join(out, name))
        path = os.path.join(out, name, os.path.basename(source))
        with open(path, "wb") as f:
            f.write(make(elf))
        written[name] = path
    print(json.dumps(written))


if __name__ == "__main__":
    main()
