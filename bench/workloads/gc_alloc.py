"""Allocation-heavy workload for bench/gc: batches of 1000 records (objects
with a dict and lists, each pointing back at its batch: a cycle per record),
the last 20 batches kept alive: a steady stream of young collections and some
older ones. Prints READY, waits for GO on stdin, builds argv[1] batches,
prints RESULT {"wall": s, "cpu": s, "collections": n} and exits."""
import gc
import json
import sys
import time


class Record:
    def __init__(self, batch, i):
        self.batch = batch  # a cycle: batch -> record -> batch
        self.fields = {"id": i, "name": "r%d" % i, "tags": ["a", "b", str(i)], "pos": [i, i + 1.5]}


def make_batch(n):
    batch = []
    for i in range(n):
        batch.append(Record(batch, i))
    return batch


def collections():
    return sum(s["collections"] for s in gc.get_stats())


print("READY", flush=True)
sys.stdin.readline()
batches, window = int(sys.argv[1]), []
before = collections()
wall, cpu = time.perf_counter(), time.thread_time()
for _ in range(batches):
    window.append(make_batch(1000))
    if len(window) > 20:
        del window[0]
wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
print("RESULT " + json.dumps({"wall": wall, "cpu": cpu, "collections": collections() - before}), flush=True)
