"""Short-lived cyclic garbage for bench/observer's GC-heavy row: objects that
point at themselves, dropped at once, with the young generation's threshold
set to argv[2] (default 350; bench/observer scales it to a fixed rate):
thousands of gen-0 collections per second of small, cheap collections, where
a per-collection cost shows most. Prints
READY, waits for GO on stdin, makes argv[1] objects, prints RESULT {"wall": s,
"cpu": s, "collections": n, "gen0": n} and exits."""
import gc
import json
import sys
import time


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it


gc.set_threshold(int(sys.argv[2]) if len(sys.argv) > 2 else 350, *gc.get_threshold()[1:])
print("READY", flush=True)
sys.stdin.readline()
n = int(sys.argv[1])
before = gc.get_stats()
wall, cpu = time.perf_counter(), time.thread_time()
for _ in range(n):
    Node()
wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
after = gc.get_stats()
print("RESULT " + json.dumps({"wall": wall, "cpu": cpu,
                              "collections": sum(a["collections"] - b["collections"] for a, b in zip(after, before)),
                              "gen0": after[0]["collections"] - before[0]["collections"]}), flush=True)
