"""gc.collect(0) in a loop on an empty young generation, for bench/gc: what
one collection costs the collecting thread. Prints READY, waits for GO on
stdin, collects argv[1] times from argv[2] (default 1) Python frames deep (a
stack pyebpf walks for every collection it reports), prints RESULT {"wall": s,
"cpu": s, "collections": n} and exits."""
import gc
import json
import sys
import time

gc.disable()  # only the collections below
print("READY", flush=True)
sys.stdin.readline()
n = int(sys.argv[1])
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def collect(levels):
    if levels > 1:
        return collect(levels - 1)
    before = sum(s["collections"] for s in gc.get_stats())
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(n):
        gc.collect(0)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    collections = sum(s["collections"] for s in gc.get_stats()) - before
    return {"wall": wall, "cpu": cpu, "collections": collections}


print("RESULT " + json.dumps(collect(depth)), flush=True)
