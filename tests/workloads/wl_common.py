"""Shared by the workloads pyebpf's end-to-end tests profile.

Protocol with the test harness (tests/e2e/harness.cpp): a workload prints
"READY {json}" once set up, waits for "GO" on stdin (sent once pyebpf is
tracing), runs its scenario measuring its own ground truth, prints
"RESULT {json}", then waits for stdin to close (or exits, if told to).
Runs on CPython 3.8+.
"""
import json
import os
import random
import sys
import threading
import time


def emit(tag, **data):
    sys.stdout.write(tag + " " + json.dumps(data) + "\n")
    sys.stdout.flush()


def ready(**data):
    data.setdefault("pid", os.getpid())
    data.setdefault("version", "%d.%d.%d" % sys.version_info[:3])
    emit("READY", **data)


def wait_go():
    line = sys.stdin.readline()
    if line.strip() != "GO":
        sys.exit("expected GO, got %r" % line)


def result(**data):
    emit("RESULT", **data)


def linger():
    """Keep the process alive until the harness closes stdin."""
    sys.stdin.read()


def burn_cpu(seconds):
    """Burns this thread's CPU time for `seconds` (thread CPU clock)."""
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def jitter(rng=random.Random(7)):
    """A factor in [0.5, 1.5): varies slice lengths so they cannot alias with a fixed sampling rate."""
    return 0.5 + rng.random()


def line_of(marker, path=None):
    """Line number of the source line that ends with `# LINE:<marker>`."""
    path = path or sys.modules["__main__"].__file__
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# LINE:" + marker):
                return number
    raise LookupError(marker)


def native_id():
    return threading.get_native_id()
