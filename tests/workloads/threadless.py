"""A script that never imports threading (as a batch job or a CLI tool): no
threading._active to name threads from. Spins for argv[1] seconds on a known
line. Speaks the harness protocol (wl_common.py) by hand, since wl_common
imports threading, and imports a service's worth of other modules so that
sys.modules is as large as a real program's."""
import base64, bisect, collections, csv, decimal, difflib, fractions, functools, hashlib  # noqa: E401
import heapq, itertools, json, math, os, random, re, statistics, string, struct, sys, textwrap, time  # noqa: E401

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0


def emit(tag, **data):
    sys.stdout.write(tag + " " + json.dumps(data) + "\n")
    sys.stdout.flush()


def spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1  # LINE:spin
    return n


emit("READY", pid=os.getpid(), version="%d.%d.%d" % sys.version_info[:3])
if sys.stdin.readline().strip() != "GO":
    sys.exit("expected GO")
spin(SECONDS)
emit("RESULT", threading_imported="threading" in sys.modules, modules=len(sys.modules))
sys.stdin.read()
