"""A thread 50 Python frames deep (argv[1]), spinning there, for bench/observer's
py_stack row: every CPU-clock sample of it walks the whole stack. Prints READY,
waits for GO on stdin, spins argv[2] seconds (default 3), prints RESULT
{"wall": s, "cpu": s}, then waits idle for the end of its input before it
exits (a profiler still attached can read its counters meanwhile).

Each frame runs a function of its own, as in a real deep stack (middleware,
views, serializers): the walker reads a code object once per sample however
often it recurs (on 3.14+, once until the target frees a code object), so one
recursive function would cost it less than users' stacks do."""
import json
import sys
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 50
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
if DEPTH < 2:
    sys.exit("deep_stack.py: depth %d: at least 2 (the module's frame and the one that spins)" % DEPTH)

SPIN = """
    wall, cpu = time.perf_counter(), time.thread_time()
    end = wall + SECONDS
    while time.perf_counter() < end:
        pass
    return {"wall": time.perf_counter() - wall, "cpu": time.thread_time() - cpu}
"""


def define_levels(depth):
    """level_1 ... level_{depth-1}, each calling the next; the last spins."""
    last = depth - 1
    source = "".join("def level_%d():\n    return level_%d()\n" % (i, i + 1) for i in range(1, last))
    source += "def level_%d():%s" % (last, SPIN)
    namespace = {"time": time, "SECONDS": SECONDS}
    exec(compile(source, "deep_stack_levels.py", "exec"), namespace)
    return namespace["level_1"]


level_1 = define_levels(DEPTH)
print("READY", flush=True)
sys.stdin.readline()
print("RESULT " + json.dumps(level_1()), flush=True)  # the module's frame is the first
sys.stdin.read()
