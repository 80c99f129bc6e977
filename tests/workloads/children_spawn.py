"""Starts another Python program as a child, directly or through a shell that execs it.

usage: children_spawn.py direct|shell|forks_first PYTHON

On GO, runs children_child.py under PYTHON (`PYTHON children_child.py`, or
`sh -c 'sleep 0.2; exec PYTHON children_child.py'`: a forked copy of this
process that execs a shell, which execs Python) and waits for it. RESULT has
the child's own report: its pid, version and the CPU time it spent in
child_work. forks_first: run directly, and the child forks first thing; the
forked copy does the work (its pid in the report's "forked").
"""
import json
import os
import subprocess
import sys

import wl_common

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    mode, python = sys.argv[1], sys.argv[2]
    child = [python, os.path.join(HERE, "children_child.py")]
    if mode == "shell":
        child = ["/bin/sh", "-c", "sleep 0.2; exec %s %s" % (child[0], child[1])]
    wl_common.ready()
    wl_common.wait_go()
    env = dict(os.environ, FORK_FIRST="1" if mode == "forks_first" else "0")
    out = subprocess.run(child, capture_output=True, text=True, check=True, env=env).stdout
    wl_common.result(child=json.loads(out.split("CHILD ", 1)[1]))
    wl_common.linger()


if __name__ == "__main__":
    main()
