"""A target that becomes other programs in the same pid.

usage: children_exec_self.py PYTHON

On GO, burns 1 s of CPU in before_exec, then execs `sh -c` that spins in the
shell for a while (no Python at all) and then execs `PYTHON children_child.py`:
a new interpreter, maybe of another CPython version, in the same pid and a
new address space. That child prints CHILD {pid, version, cpu_s} when done.
"""
import os
import sys

import wl_common

HERE = os.path.dirname(os.path.abspath(__file__))


def before_exec(seconds):
    wl_common.burn_cpu(seconds)


def main():
    python = sys.argv[1]
    wl_common.ready()
    wl_common.wait_go()
    before_exec(1.0)
    sys.stdout.flush()
    spin = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
    os.execv("/bin/sh", ["sh", "-c", "%s; exec %s %s" % (spin, python, os.path.join(HERE, "children_child.py"))])


if __name__ == "__main__":
    main()
