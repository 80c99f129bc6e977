"""A thread 50 Python frames deep (argv[1]), spinning there, for bench/observer's
py_stack row: every CPU-clock sample of it walks the whole stack. Prints READY,
waits for GO on stdin, spins argv[2] seconds (default 3), prints RESULT
{"wall": s, "cpu": s}, then waits idle for the end of its input before it
exits (a profiler still attached can read its counters meanwhile)."""
import json
import sys
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 50
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0


def descend(levels):
    if levels > 1:  # this frame is one of the DEPTH
        return descend(levels - 1)
    wall, cpu = time.perf_counter(), time.thread_time()
    end = wall + SECONDS
    while time.perf_counter() < end:
        pass
    return {"wall": time.perf_counter() - wall, "cpu": time.thread_time() - cpu}


print("READY", flush=True)
sys.stdin.readline()
print("RESULT " + json.dumps(descend(DEPTH - 1)), flush=True)  # the module's frame is the first
sys.stdin.read()
