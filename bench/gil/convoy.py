"""GIL convoy for bench/gil/run --workload convoy: many threads, each waking
from a short sleep to do a little pure-Python work, so most wake-ups queue
for the GIL behind the others (issue 11 measured ~5,800 gil_wait events/s of
>= 1 ms from 500 such threads). Same protocol and RESULT keys as workload.py:
a "roundtrip" is one wake-up with its work, a "loop" one unit of the CPU
burner's work.

argv: seconds, threads (default 500), sleep between wake-ups in s (default
0.05: ~10,000 wake-ups/s if the GIL lets them run).
"""
import json
import os
import sys
import threading
import time

from workload import burner, compute

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 500
SLEEP = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05


def worker(deadline, counts, index):
    cpu0 = time.thread_time()
    done = 0
    while time.perf_counter() < deadline:
        time.sleep(SLEEP)
        compute(200)
        done += 1
    counts[index] = (done, time.thread_time() - cpu0)


def main():
    threading.stack_size(256 * 1024)
    sys.stdout.write("READY %d\n" % os.getpid())
    sys.stdout.flush()
    sys.stdin.readline()
    stop = threading.Event()
    counts = {}
    start = time.perf_counter()
    # The workers stop by the clock: in the convoy the main thread could wait
    # long for the GIL to tell them.
    deadline = start + SECONDS
    workers = [threading.Thread(target=worker, args=(deadline, counts, i), name="Convoy-%d" % i)
               for i in range(THREADS)]
    hog = threading.Thread(target=burner, args=(stop, counts), name="Burner")
    for t in workers + [hog]:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - start
    stop.set()
    hog.join()
    roundtrips = sum(counts[i][0] for i in range(THREADS))
    worker_cpu = sum(counts[i][1] for i in range(THREADS))
    sys.stdout.write("RESULT " + json.dumps({
        "seconds": elapsed,
        "roundtrips_per_s": roundtrips / elapsed,
        "cpu_loops_per_s": counts["cpu_loops"] / elapsed,
        "cpu_us_per_roundtrip": worker_cpu * 1e6 / max(roundtrips, 1),
        "cpu_us_per_loop": counts["burner_cpu"] * 1e6 / max(counts["cpu_loops"], 1),
    }) + "\n")
    sys.stdout.flush()


main()
